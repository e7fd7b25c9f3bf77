"""CLAM Knowledge Renderer (G-14, G-15): the exact document in each of the 5 languages, order, unknowns."""

from __future__ import annotations

import pytest

from governance.clam.renderer import HEADERS, LABELS, LANGUAGES, label, render
from governance.clam.triples import CATEGORY, Triple

GRAPH = [  # deliberately out of order, with an alias and a duplicate
    Triple("User", "fixed", "a capacitive sensor bug"),
    Triple("User", "has_age", "60"),
    Triple("User", "likes", "pizza"),
    Triple("Server", "ip_address", "192.168.1.10"),
    Triple("user", "is_named", "Marcello Mangione"),
    Triple("User", "uses", "ESP32"),
    Triple("User", "lives_in", "Milan"),
    Triple("User", "has_name", "Marcello Mangione"),
]

EXPECTED = {
    "en": "👤 USER PROFILE:\n  Name: Marcello Mangione\n  Age: 60\n  Lives in: Milan\n\n"
          "⭐ PREFERENCES:\n  Likes: pizza\n  Uses: ESP32\n  Server · Ip address: 192.168.1.10\n\n"
          "📚 EXPERIENCES:\n  Solved: a capacitive sensor bug",
    "it": "👤 PROFILO UTENTE:\n  Nome: Marcello Mangione\n  Età: 60\n  Vive a: Milan\n\n"
          "⭐ PREFERENZE:\n  Apprezza: pizza\n  Usa: ESP32\n  Server · Ip address: 192.168.1.10\n\n"
          "📚 ESPERIENZE:\n  Ha risolto: a capacitive sensor bug",
    "de": "👤 BENUTZERPROFIL:\n  Name: Marcello Mangione\n  Alter: 60\n  Wohnt in: Milan\n\n"
          "⭐ VORLIEBEN:\n  Mag: pizza\n  Verwendet: ESP32\n  Server · Ip address: 192.168.1.10\n\n"
          "📚 ERFAHRUNGEN:\n  Hat gelöst: a capacitive sensor bug",
    "fr": "👤 PROFIL UTILISATEUR:\n  Nom: Marcello Mangione\n  Âge: 60\n  Habite à: Milan\n\n"
          "⭐ PRÉFÉRENCES:\n  Aime: pizza\n  Utilise: ESP32\n  Server · Ip address: 192.168.1.10\n\n"
          "📚 EXPÉRIENCES:\n  A résolu: a capacitive sensor bug",
    "es": "👤 PERFIL DE USUARIO:\n  Nombre: Marcello Mangione\n  Edad: 60\n  Vive en: Milan\n\n"
          "⭐ PREFERENCIAS:\n  Le gusta: pizza\n  Usa: ESP32\n  Server · Ip address: 192.168.1.10\n\n"
          "📚 EXPERIENCIAS:\n  Resolvió: a capacitive sensor bug",
}  # fmt: skip


def test_seed_example_exactly() -> None:
    graph = [Triple("User", "has_name", "Marcello Mangione"), Triple("User", "has_age", "60")]
    assert render(graph) == "👤 USER PROFILE:\n  Name: Marcello Mangione\n  Age: 60"
    assert render(reversed(graph)) == render(graph)  # name before age whatever the graph's order


@pytest.mark.parametrize("language", LANGUAGES)
def test_each_language_exactly(language: str) -> None:
    assert render(GRAPH, language) == EXPECTED[language]


def test_five_languages_all_labelled() -> None:
    assert LANGUAGES == ("it", "en", "de", "fr", "es")
    for language in LANGUAGES:
        assert set(LABELS[language]) == set(CATEGORY)  # every canonical predicate has a label
        assert set(HEADERS[language]) == {"identity", "preferences", "experiences"}
        assert [h[0] for h in HEADERS[language].values()] == ["👤", "⭐", "📚"]
    assert len({HEADERS[lang]["identity"] for lang in LANGUAGES}) == 5  # actually localised


def test_deterministic_line_order_within_a_category() -> None:
    graph = [Triple("User", "likes", "tea"), Triple("User", "likes", "Coffee"),
             Triple("User", "favourite_colour", "blue"), Triple("Anna", "likes", "jazz"),
             Triple("User", "uses", "ESP32")]  # fmt: skip
    assert render(graph) == ("⭐ PREFERENCES:\n  Likes: Coffee\n  Likes: tea\n  Uses: ESP32\n"
                             "  Favourite colour: blue\n  Anna · Likes: jazz")  # fmt: skip
    assert render(reversed(graph)) == render(graph)


def test_empty_graph_and_missing_sections() -> None:
    assert render([]) == ""
    assert render([Triple("User", "visited", "Rome")], "it") == "📚 ESPERIENZE:\n  Ha visitato: Rome"


def test_unknown_predicate_label_and_unknown_language() -> None:
    assert label("has_ip", "de") == "Has ip"
    assert label("lives_in", "fr") == "Habite à"
    with pytest.raises(ValueError, match="language"):
        render(GRAPH, "pt")
    with pytest.raises(ValueError, match="language"):
        render([], "EN")
