"""The Knowledge Renderer (G-14, G-15): the graph's triples as a document for the system prompt, in 5 languages.

Layout: one section per category in the order identity, preferences, experiences, empty sections left out,
sections separated by a blank line; a section is its localised header with emoji and a colon, then one line
``"  <Label>: <object>"`` per triple. Lines about the user come first, then other subjects (``"  <Subject> ·
<Label>: <object>"``) by subject; within a subject, predicates in the vocabulary's order (name before age, as
in the seed) then unknown predicates alphabetically, then objects. An unknown predicate's label is its text
with ``_`` as spaces, capitalised, the same in every language. The triples are normalised and duplicates
(same ``triple_id``) shown once; no triples renders as the empty string.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from governance.clam.triples import CATEGORIES, ORDER, USER, Category, Triple, category, unique

LANGUAGES: tuple[str, ...] = ("it", "en", "de", "fr", "es")

HEADERS: Mapping[str, Mapping[Category, str]] = {
    "en": {"identity": "👤 USER PROFILE", "preferences": "⭐ PREFERENCES", "experiences": "📚 EXPERIENCES"},
    "it": {"identity": "👤 PROFILO UTENTE", "preferences": "⭐ PREFERENZE", "experiences": "📚 ESPERIENZE"},
    "de": {"identity": "👤 BENUTZERPROFIL", "preferences": "⭐ VORLIEBEN", "experiences": "📚 ERFAHRUNGEN"},
    "fr": {"identity": "👤 PROFIL UTILISATEUR", "preferences": "⭐ PRÉFÉRENCES", "experiences": "📚 EXPÉRIENCES"},
    "es": {"identity": "👤 PERFIL DE USUARIO", "preferences": "⭐ PREFERENCIAS", "experiences": "📚 EXPERIENCIAS"},
}

# canonical predicate -> labels in LANGUAGES order (it, en, de, fr, es)
_LABELS: Mapping[str, tuple[str, str, str, str, str]] = {
    "has_name": ("Nome", "Name", "Name", "Nom", "Nombre"),
    "has_age": ("Età", "Age", "Alter", "Âge", "Edad"),
    "lives_in": ("Vive a", "Lives in", "Wohnt in", "Habite à", "Vive en"),
    "comes_from": ("Viene da", "Comes from", "Kommt aus", "Vient de", "Viene de"),
    "works_at": ("Lavora presso", "Works at", "Arbeitet bei", "Travaille chez", "Trabaja en"),
    "has_role": ("Professione", "Occupation", "Beruf", "Profession", "Profesión"),
    "speaks": ("Parla", "Speaks", "Spricht", "Parle", "Habla"),
    "likes": ("Apprezza", "Likes", "Mag", "Aime", "Le gusta"),
    "dislikes": ("Non apprezza", "Dislikes", "Mag nicht", "N'aime pas", "No le gusta"),
    "uses": ("Usa", "Uses", "Verwendet", "Utilise", "Usa"),
    "owns": ("Possiede", "Owns", "Besitzt", "Possède", "Posee"),
    "interested_in": ("Interessato a", "Interested in", "Interessiert an", "Intéressé par", "Interesado en"),
    "wants": ("Desidera", "Wants", "Möchte", "Souhaite", "Quiere"),
    "solved": ("Ha risolto", "Solved", "Hat gelöst", "A résolu", "Resolvió"),
    "learned": ("Ha imparato", "Learned", "Hat gelernt", "A appris", "Aprendió"),
    "built": ("Ha costruito", "Built", "Hat gebaut", "A construit", "Construyó"),
    "visited": ("Ha visitato", "Visited", "Hat besucht", "A visité", "Visitó"),
    "worked_on": ("Ha lavorato a", "Worked on", "Hat gearbeitet an", "A travaillé sur", "Trabajó en"),
}
LABELS: Mapping[str, Mapping[str, str]] = {
    lang: {p: labels[i] for p, labels in _LABELS.items()} for i, lang in enumerate(LANGUAGES)
}


def label(predicate: str, language: str = "en") -> str:
    """The localised label of a canonical predicate; an unknown one as text: ``has_ip`` -> ``Has ip``."""
    _check(language)
    known = LABELS[language].get(predicate)
    if known is not None:
        return known
    text = predicate.replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def render(triples: Iterable[Triple], language: str = "en") -> str:
    """The module docstring's layout. Unknown language -> ValueError."""
    _check(language)
    sections: dict[Category, list[Triple]] = {c: [] for c in CATEGORIES}
    for t in unique(triples):
        sections[category(t.predicate)].append(t)
    blocks: list[str] = []
    for cat in CATEGORIES:
        if not sections[cat]:
            continue
        lines = [f"{HEADERS[language][cat]}:"]
        for t in sorted(sections[cat], key=_line_order):
            who = "" if t.subject == USER else f"{t.subject} · "
            lines.append(f"  {who}{label(t.predicate, language)}: {t.object}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _line_order(t: Triple) -> tuple[bool, str, int, str, str, str]:
    return (t.subject != USER, t.subject.casefold(), ORDER.get(t.predicate, len(ORDER)), t.predicate,
            t.object.casefold(), t.object)  # fmt: skip


def _check(language: str) -> None:
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, got {language!r}")
