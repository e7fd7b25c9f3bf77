"""The knowledge graph's triples (G-05): predicate canonicalisation, categories, ids, seed truths.

Semantic duplicates collapse in two steps: ``canonical_predicate`` folds aliases (``is_named``, ``called``,
``name`` → ``has_name``), and ``triple_id`` hashes the normalised triple with subject and object casefolded,
so ``(user, is_named, marcello)`` and ``(User, has_name, Marcello)`` are one triple.

Categories (the renderer's groups): identity (who the user is), experiences (what was done: past actions),
preferences (everything else). An unknown predicate falls into ``preferences``: the seed files static user
preferences and facts together in semantic memory, identity is a closed list a new predicate rarely belongs
to, and an experience is recognised by its past-action verb, which the vocabulary lists.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Category = Literal["identity", "preferences", "experiences"]
CATEGORIES: tuple[Category, ...] = ("identity", "preferences", "experiences")  # the renderer's order
USER = "User"
_USER_ALIASES = frozenset({"user", "i", "me", "my", "myself", "the user"})
_NS_TRIPLE = uuid.uuid5(uuid.NAMESPACE_URL, "hivemem:clam:triple")


@dataclass(frozen=True)
class Triple:
    subject: str
    predicate: str
    object: str

    def __post_init__(self) -> None:
        for name in ("subject", "predicate", "object"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"triple {name} must be a non-empty string, got {value!r}")


# canonical predicate -> (category, aliases). The order is the renderer's line order inside a category
# (name before age, as in the seed's example), so it is part of the output, not a detail.
_VOCABULARY: tuple[tuple[str, Category, tuple[str, ...]], ...] = (
    ("has_name", "identity", ("name", "is_named", "named", "called", "is_called", "full_name")),
    ("has_age", "identity", ("age", "is_aged", "aged", "years_old")),
    ("lives_in", "identity", ("resides_in", "home_city", "lives_at", "based_in", "location", "city")),
    ("comes_from", "identity", ("is_from", "from", "born_in", "hometown", "origin")),
    ("works_at", "identity", ("employed_by", "works_for", "employer", "company", "employed_at")),
    ("has_role", "identity", ("job", "occupation", "profession", "works_as", "role", "has_job", "job_title", "is_a")),
    ("speaks", "identity", ("language", "speaks_language", "native_language", "languages")),
    ("likes", "preferences", ("enjoys", "prefers", "loves", "is_fond_of", "favourite", "favorite", "like")),
    ("dislikes", "preferences", ("hates", "does_not_like", "doesnt_like", "avoids", "dislike")),
    ("uses", "preferences", ("works_with", "utilises", "utilizes", "using", "uses_tool", "use")),
    ("owns", "preferences", ("possesses", "has_device", "owned")),
    ("interested_in", "preferences", ("is_interested_in", "curious_about", "hobby", "has_hobby", "interest")),
    ("wants", "preferences", ("wishes", "goal", "has_goal", "aims_to", "plans_to", "wants_to")),
    ("solved", "experiences", ("fixed", "resolved", "debugged", "repaired", "solves")),
    ("learned", "experiences", ("learnt", "studied", "discovered")),
    ("built", "experiences", ("created", "made", "developed", "implemented")),
    ("visited", "experiences", ("went_to", "travelled_to", "traveled_to")),
    ("worked_on", "experiences", ("contributed_to", "project", "worked_at_project")),
)
CANONICAL: Mapping[str, str] = {alias: p for p, _, aliases in _VOCABULARY for alias in (p, *aliases)}
CATEGORY: Mapping[str, Category] = {p: c for p, c, _ in _VOCABULARY}
ORDER: Mapping[str, int] = {p: i for i, (p, _, _) in enumerate(_VOCABULARY)}
# single-valued predicates: a second object for the same subject is a contradiction, not another fact
FUNCTIONAL: frozenset[str] = frozenset({"has_name", "has_age", "lives_in", "comes_from", "works_at"})

_SEPARATORS = re.compile(r"[\s\-]+")
_UNDERSCORES = re.compile(r"_+")
_SPACES = re.compile(r"\s+")


def canonical_predicate(p: str) -> str:
    """Lowercase, spaces and dashes to ``_``, alias lookup; an unknown predicate stays as its cleaned text."""
    cleaned = _UNDERSCORES.sub("_", _SEPARATORS.sub("_", p.strip().lower())).strip("_")
    if not cleaned:
        raise ValueError(f"empty predicate {p!r}")
    return CANONICAL.get(cleaned, cleaned)


def canonical_subject(s: str) -> str:
    """The user, however the text names them ("I", "me", "user"), is ``User``; other subjects are trimmed."""
    cleaned = _SPACES.sub(" ", s.strip())
    return USER if cleaned.lower() in _USER_ALIASES else cleaned


def normalise(t: Triple) -> Triple:
    return Triple(canonical_subject(t.subject), canonical_predicate(t.predicate), _SPACES.sub(" ", t.object.strip()))


def category(predicate: str) -> Category:
    """The module docstring's rule: the vocabulary's category, else ``preferences``."""
    return CATEGORY.get(canonical_predicate(predicate), "preferences")


def triple_id(t: Triple) -> str:
    """uuid5 of the normalised triple, subject and object casefolded: semantic duplicates get one id."""
    n = normalise(t)
    return str(uuid.uuid5(_NS_TRIPLE, "\x1f".join((n.subject.casefold(), n.predicate, n.object.casefold()))))


def same_slot(a: Triple, b: Triple) -> bool:
    """Same subject and predicate (both normalised): for a functional predicate, one value at a time."""
    na, nb = normalise(a), normalise(b)
    return na.subject.casefold() == nb.subject.casefold() and na.predicate == nb.predicate


def unique(triples: Iterable[Triple]) -> list[Triple]:
    """Normalised triples, first occurrence of each ``triple_id`` kept, input order."""
    seen: set[str] = set()
    out: list[Triple] = []
    for t in triples:
        key = triple_id(t)
        if key not in seen:
            seen.add(key)
            out.append(normalise(t))
    return out


def seed_truths(doc: Mapping[str, Any]) -> list[Triple]:
    """Parse ``{"truths": [{"subject", "predicate", "object"}, ...]}`` (seed_truths.yaml, already loaded).

    Strict (G-02): other keys, missing keys or non-scalar values are refused with ValueError naming the
    entry. A number as object (``object: 60`` in YAML) is taken as its text. Duplicates collapse.
    """
    if not isinstance(doc, Mapping):
        raise ValueError(f"seed truths must be a mapping, got {type(doc).__name__}")
    extra = set(doc) - {"truths"}
    if extra:
        raise ValueError(f"seed truths: unknown keys {sorted(map(str, extra))}")
    truths = doc.get("truths")
    if not isinstance(truths, list):
        raise ValueError("seed truths: 'truths' must be a list")
    out: list[Triple] = []
    for i, item in enumerate(truths):
        if not isinstance(item, Mapping) or set(item) != {"subject", "predicate", "object"}:
            raise ValueError(f"seed truths[{i}]: must have exactly subject, predicate, object")
        values: list[str] = []
        for key in ("subject", "predicate", "object"):
            v = item[key]
            if isinstance(v, bool) or not isinstance(v, str | int | float):
                raise ValueError(f"seed truths[{i}].{key}: must be text or a number, got {type(v).__name__}")
            values.append(str(v))
        try:
            out.append(Triple(*values))
        except ValueError as e:
            raise ValueError(f"seed truths[{i}]: {e}") from None
    return unique(out)


def seed_when_empty(graph_size: int, doc: Mapping[str, Any]) -> list[Triple]:
    """The triples to pre-populate the graph with: the seed's, only when the graph is empty (G-05).

    The document is validated either way, so a broken seed file is noticed on every start, not only the first.
    """
    truths = seed_truths(doc)
    return truths if graph_size == 0 else []
