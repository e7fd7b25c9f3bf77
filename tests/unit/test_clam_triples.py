"""CLAM knowledge-graph triples (G-05): canonical predicates, duplicates collapse, categories, seed truths."""

from __future__ import annotations

from typing import Any

import pytest

from governance.clam.triples import (
    CANONICAL,
    CATEGORY,
    FUNCTIONAL,
    Triple,
    canonical_predicate,
    category,
    normalise,
    same_slot,
    seed_truths,
    seed_when_empty,
    triple_id,
    unique,
)


@pytest.mark.parametrize("alias,canonical", [
    ("name", "has_name"), ("is_named", "has_name"), ("called", "has_name"), ("has_name", "has_name"),
    ("Is Named", "has_name"), (" is-named ", "has_name"), ("is__named", "has_name"),
    ("lives_in", "lives_in"), ("resides in", "lives_in"), ("home_city", "lives_in"),
    ("works_at", "works_at"), ("employed_by", "works_at"), ("works for", "works_at"),
    ("likes", "likes"), ("enjoys", "likes"), ("prefers", "likes"), ("loves", "likes"),
    ("uses", "uses"), ("works_with", "uses"), ("utilises", "uses"),
    ("age", "has_age"), ("is_aged", "has_age"), ("has_age", "has_age"),
    ("speaks", "speaks"), ("language", "speaks"),
    ("fixed", "solved"), ("solved", "solved"), ("resolved", "solved"),
    ("favourite colour", "favourite_colour"),  # unknown: the cleaned text
])  # fmt: skip
def test_canonical_predicate(alias: str, canonical: str) -> None:
    assert canonical_predicate(alias) == canonical


def test_canonical_predicate_refuses_empty() -> None:
    with pytest.raises(ValueError):
        canonical_predicate(" - ")


def test_vocabulary_is_closed() -> None:
    assert 15 <= len(CATEGORY) <= 20
    assert set(CANONICAL.values()) == set(CATEGORY)  # every alias lands on a canonical predicate
    assert all(CANONICAL[p] == p for p in CATEGORY)  # a canonical predicate is its own alias
    assert set(CATEGORY) >= FUNCTIONAL


def test_aliases_collapse_to_one_triple_id() -> None:
    a = Triple("User", "has_name", "Marcello Mangione")
    b = Triple("user", "is_named", "  marcello   mangione ")
    c = Triple("I", "called", "Marcello Mangione")
    assert triple_id(a) == triple_id(b) == triple_id(c)
    assert triple_id(a) != triple_id(Triple("User", "has_name", "Marcello"))
    assert triple_id(a) != triple_id(Triple("Marcello Mangione", "has_name", "User"))  # order matters
    assert len(unique([a, b, c, Triple("User", "has_age", "60")])) == 2
    assert unique([b, a]) == [Triple("User", "has_name", "marcello mangione")]  # first occurrence kept


def test_normalise() -> None:
    assert normalise(Triple(" me ", "Resides In", " Milan ")) == Triple("User", "lives_in", "Milan")
    assert normalise(Triple("Server", "ip address", "192.168.1.10")) == Triple("Server", "ip_address", "192.168.1.10")
    assert same_slot(Triple("I", "home city", "Milan"), Triple("User", "lives_in", "Rome"))
    assert not same_slot(Triple("User", "lives_in", "Milan"), Triple("Bob", "lives_in", "Milan"))


def test_triple_refuses_empty_parts() -> None:
    with pytest.raises(ValueError, match="object"):
        Triple("User", "has_name", "  ")


@pytest.mark.parametrize("p,cat", [
    ("has_name", "identity"), ("is_named", "identity"), ("has_age", "identity"), ("lives_in", "identity"),
    ("works_at", "identity"), ("likes", "preferences"), ("uses", "preferences"), ("fixed", "experiences"),
    ("visited", "experiences"), ("ip_address", "preferences"),  # unknown: preferences (documented)
])  # fmt: skip
def test_category(p: str, cat: str) -> None:
    assert category(p) == cat


SEED: dict[str, Any] = {"truths": [
    {"subject": "User", "predicate": "has_name", "object": "Marcello Mangione"},
    {"subject": "user", "predicate": "age", "object": 60},  # YAML's int
    {"subject": "User", "predicate": "is_named", "object": "Marcello Mangione"},  # a duplicate
]}  # fmt: skip


def test_seed_truths_parsed_normalised_deduplicated() -> None:
    assert seed_truths(SEED) == [Triple("User", "has_name", "Marcello Mangione"), Triple("User", "has_age", "60")]
    assert seed_truths({"truths": []}) == []


def test_seed_truths_only_when_the_graph_is_empty() -> None:
    assert seed_when_empty(0, SEED) == seed_truths(SEED)
    assert seed_when_empty(1, SEED) == []
    assert seed_when_empty(500, SEED) == []


@pytest.mark.parametrize("doc", [
    {},                                                                   # no truths
    {"truths": {"subject": "User"}},                                      # not a list
    {"truths": [], "extra": 1},                                           # unknown key
    {"truths": [{"subject": "User", "predicate": "has_name"}]},           # missing object
    {"truths": [{"subject": "User", "predicate": "p", "object": "o", "x": 1}]},
    {"truths": [{"subject": "User", "predicate": "p", "object": ["a"]}]},
    {"truths": [{"subject": "User", "predicate": "p", "object": True}]},
    {"truths": [{"subject": "", "predicate": "p", "object": "o"}]},
    {"truths": ["User has_name X"]},
])  # fmt: skip
def test_seed_truths_refuses_malformed(doc: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        seed_truths(doc)
    with pytest.raises(ValueError):
        seed_when_empty(3, doc)  # validated even when it will not be used
