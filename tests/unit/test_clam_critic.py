"""CLAM local critic (G-08): a devil's advocate — contradictions fail a node, restatements do not."""

from __future__ import annotations

import pytest

from governance.clam.critic import critique_local
from governance.clam.nodes import Deduction, MemoryNode, new_node
from governance.clam.triples import Triple

T0 = 1_700_000_000_000


def stm(text: str, triple: Triple | None = None) -> MemoryNode:
    return new_node(Deduction("semantic", text, triple), at=T0, origin_context="test")


USES_ESP32 = stm("User uses ESP32")
LIVES_MILAN = stm("User lives in Milan", Triple("User", "lives_in", "Milan"))


@pytest.mark.parametrize("exchange", [
    "I don't use ESP32 anymore.",
    "Honestly, I no longer use the ESP32.",
    "I stopped using ESP32 boards, I never use ESP32 now.",
])  # fmt: skip
def test_negation_in_the_exchange_fails(exchange: str) -> None:
    c = critique_local(USES_ESP32, exchange, [])
    assert (c.withstands, c.reason) == (False, "contradicted_by_exchange")
    assert c.debate.startswith("Claim: User uses ESP32\nExchange: contradicts it")
    assert c.debate.endswith("Verdict: fails (contradicted by exchange).")


def test_negated_node_fails_on_affirmation() -> None:
    c = critique_local(stm("I don't use ESP32 anymore"), "I use ESP32 every day.", [])
    assert (c.withstands, c.reason) == (False, "contradicted_by_exchange")


def test_restatement_withstands() -> None:
    c = critique_local(USES_ESP32, "Yes, I use ESP32 for the greenhouse.", [])
    assert (c.withstands, c.reason) == (True, "restated")
    assert c.debate == ('Claim: User uses ESP32\nExchange: restates it — "Yes, I use ESP32 for the greenhouse."; '
                        "no denial found.\nGraph: no conflicting triple.\nVerdict: withstands (restated).")  # fmt: skip


def test_unchallenged_withstands_and_questions_are_not_denials() -> None:
    c = critique_local(USES_ESP32, "Why doesn't ESP32 deep sleep work? ESP32 boards are cheap.", [])
    assert (c.withstands, c.reason) == (True, "unchallenged")


def test_functional_conflict_in_the_exchange_fails() -> None:
    c = critique_local(LIVES_MILAN, "I live in Rome now.", [])
    assert (c.withstands, c.reason) == (False, "contradicted_by_exchange")
    assert "lives_in" in c.debate
    assert critique_local(LIVES_MILAN, "I live in milan.", []).reason == "restated"  # same value, other case


def test_functional_conflict_in_the_graph_fails() -> None:
    graph = [Triple("User", "likes", "pizza"), Triple("user", "resides in", "Rome")]
    c = critique_local(LIVES_MILAN, "", graph)
    assert (c.withstands, c.reason) == (False, "contradicted_by_graph")
    assert "Graph: contradicts it — User lives in Rome holds" in c.debate
    # the claim is read from the description when the node carries no triple
    assert critique_local(stm("User lives in Milan"), "", graph).reason == "contradicted_by_graph"


def test_no_conflict_for_multivalued_predicates_or_other_subjects() -> None:
    likes = stm("User likes pizza", Triple("User", "likes", "pizza"))
    graph = [Triple("User", "likes", "sushi"), Triple("Bob", "lives_in", "Rome"), Triple("User", "lives_in", "Milan")]
    assert critique_local(likes, "I like sushi too.", graph).withstands
    assert critique_local(LIVES_MILAN, "", graph).withstands


def test_graph_denied_by_a_negated_node_fails() -> None:
    c = critique_local(stm("I don't use ESP32 anymore"), "", [Triple("User", "uses", "ESP32")])
    assert (c.withstands, c.reason) == (False, "contradicted_by_graph")


def test_deterministic_whatever_the_graph_order() -> None:
    graph = [Triple("User", "lives_in", "Rome"), Triple("User", "lives_in", "Paris")]
    assert critique_local(LIVES_MILAN, "x", graph) == critique_local(LIVES_MILAN, "x", list(reversed(graph)))
