"""CLAM node lifecycle (G-03, G-08, G-10, X-29): verdicts, promotion and decay at their boundaries, links."""

from __future__ import annotations

import dataclasses
import json
import uuid

import hypothesis.strategies as st
import pytest
from hypothesis import given

from governance.clam.config import ClamConfig
from governance.clam.lifecycle import GcResult, addressed, addresses, apply_verdict, gc, jaccard, links, touch
from governance.clam.nodes import Deduction, MemoryNode, new_node, node_id, topic_terms
from governance.clam.triples import Triple

CFG = ClamConfig()  # threshold 3, min score 2, decay 60 min
T0 = 1_700_000_000_000
HOUR = 3_600_000


def node(score: int = 1, last: int = T0, text: str = "the server ip is 192.168.1.10", n: int = 0) -> MemoryNode:
    return MemoryNode(concept_id=str(uuid.UUID(int=n)), description=text, confidence_score=score,
                      creation_timestamp=T0, last_access_timestamp=last, origin_context="test", kind="semantic",
                      topic_terms=topic_terms(text))  # fmt: skip


def test_memory_node_g03_shape_and_default_score() -> None:
    n = new_node(Deduction("semantic", "The server IP is 192.168.1.10"), at=T0, origin_context="chat:1")
    assert n.confidence_score == 1 and n.creation_timestamp == n.last_access_timestamp == T0
    # deterministic: a retelling (other case, other spacing) is the same node, so a touch
    assert n.concept_id == node_id("semantic", "the  server IP is 192.168.1.10")
    assert uuid.UUID(n.concept_id).version == 5
    assert n.topic_terms == ("168", "192", "server")
    with pytest.raises(dataclasses.FrozenInstanceError):
        n.confidence_score = 5  # type: ignore[misc]


@pytest.mark.parametrize("change", [
    {"concept_id": "not-a-uuid"}, {"description": " "}, {"confidence_score": 1.5}, {"confidence_score": True},
    {"creation_timestamp": "2026-01-01"}, {"last_access_timestamp": T0 - 1}, {"kind": "fact"},
    {"topic_terms": ["a"]},
])  # fmt: skip
def test_memory_node_refuses_corrupt_data(change: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        dataclasses.replace(node(), **change)  # type: ignore[arg-type]


def test_wire_round_trip() -> None:
    n = new_node(Deduction("semantic", "User lives in Milan", Triple("User", "lives_in", "Milan")), at=T0,
                 origin_context="chat")  # fmt: skip
    for x in (n, node()):
        assert MemoryNode.from_wire(json.loads(json.dumps(x.to_wire()))) == x
    with pytest.raises(ValueError, match="triple"):
        MemoryNode(**{**n.to_wire(), "topic_terms": n.topic_terms})  # a dict where a Triple is meant


def test_deduction_rules() -> None:
    with pytest.raises(ValueError):
        Deduction("fact", "User lives in Milan")  # a fact needs its triple (X-36 dual-write writes the triple)
    with pytest.raises(ValueError):
        fact = Deduction("fact", "User lives in Milan", Triple("User", "lives_in", "Milan"))
        new_node(fact, at=T0, origin_context="")
    with pytest.raises(ValueError):
        Deduction("opinion", "x")  # type: ignore[arg-type]


def test_verdict_plus_minus_one_and_access() -> None:
    n = node(score=1, last=T0)
    up = apply_verdict(n, True, T0 + 5)
    down = apply_verdict(n, False, T0 + 7)
    assert (up.confidence_score, up.last_access_timestamp) == (2, T0 + 5)
    assert (down.confidence_score, down.last_access_timestamp) == (0, T0 + 7)
    assert apply_verdict(down, False, T0 + 8).confidence_score == -1  # no floor: a refuted node sinks
    assert n.confidence_score == 1  # frozen: the input is untouched
    assert apply_verdict(n, True, T0 - 10).last_access_timestamp == T0  # a late stamp never moves access back


def test_touch() -> None:
    assert touch(node(), T0 + 9).last_access_timestamp == T0 + 9
    assert touch(node(last=T0 + 9), T0 + 1).last_access_timestamp == T0 + 9
    assert touch(node(score=2), T0 + 9).confidence_score == 2


@pytest.mark.parametrize("score,promoted", [(2, False), (3, True), (4, True)])
def test_promotion_boundary(score: int, promoted: bool) -> None:
    n = node(score=score)
    assert gc([n], T0, CFG) == GcResult(promote=(n,) if promoted else (), decay=())


@pytest.mark.parametrize("score,idle,decays", [
    (1, HOUR, False),          # idle exactly decay_time: not yet (">")
    (1, HOUR + 1, True),       # one ms more
    (2, HOUR + 1, False),      # score == min_score does not decay ("<")
    (2, 10 * HOUR, False),
    (0, HOUR + 1, True),
    (-3, HOUR + 1, True),
    (0, HOUR, False),
])  # fmt: skip
def test_decay_boundary(score: int, idle: int, decays: bool) -> None:
    n = node(score=score, last=T0)
    assert gc([n], T0 + idle, CFG) == GcResult(promote=(), decay=(n,) if decays else ())


def test_decay_counts_from_last_access_not_creation() -> None:
    n = touch(node(score=1), T0 + HOUR)
    assert gc([n], T0 + HOUR + 1 + HOUR, CFG).decay == (n,)
    assert gc([n], T0 + 2 * HOUR, CFG).decay == ()


def test_thresholds_come_from_config() -> None:
    n = node(score=1, last=T0)
    assert gc([n], T0, ClamConfig(promotion_threshold=1, min_score=-2)).promote == (n,)
    assert gc([n], T0 + 11, ClamConfig(decay_time_ms=10)).decay == (n,)
    assert gc([n], T0 + 11, ClamConfig(decay_time_ms=10, min_score=1)).decay == ()  # X-29's trap: 1 < 1 is false


def test_gc_order_is_by_id_whatever_the_input_order_and_duplicates_refused() -> None:
    nodes = [node(score=3, n=i) for i in (5, 1, 3)]
    assert [x.concept_id for x in gc(nodes, T0, CFG).promote] == [str(uuid.UUID(int=i)) for i in (1, 3, 5)]
    with pytest.raises(ValueError, match="duplicate"):
        gc([node(n=1), node(n=1, score=2)], T0, CFG)


@given(scores=st.lists(st.integers(-5, 8), min_size=1, max_size=12), idle=st.integers(0, 3 * HOUR),
       threshold=st.integers(-2, 6), spread=st.integers(0, 4))  # fmt: skip
def test_never_promoted_and_decayed_at_once(scores: list[int], idle: int, threshold: int, spread: int) -> None:
    cfg = ClamConfig(promotion_threshold=threshold, min_score=threshold - spread)
    nodes = [node(score=s, n=i) for i, s in enumerate(scores)]
    result = gc(nodes, T0 + idle, cfg)
    promoted = {n.concept_id for n in result.promote}
    decayed = {n.concept_id for n in result.decay}
    assert not promoted & decayed
    for n in nodes:  # and each side is exactly the seed's rule
        assert (n.concept_id in promoted) == (n.confidence_score >= threshold)
        assert (n.concept_id in decayed) == (
            n.confidence_score < threshold and idle > cfg.decay_time_ms and n.confidence_score < cfg.min_score
        )


def test_jaccard() -> None:
    assert jaccard(("a", "b"), ("b", "c")) == pytest.approx(1 / 3)
    assert jaccard((), ()) == 0.0
    assert jaccard(("a",), ("a",)) == 1.0


def test_links_top_k_threshold_and_order() -> None:
    n = node(text="capacitive sensor noise moving average filter")  # 6 terms
    ltm = [
        ("z-same", ("capacitive", "sensor", "noise", "moving", "average", "filter")),  # 1.0
        ("b-half", ("capacitive", "sensor", "noise", "moving")),                      # 4/6
        ("a-half", ("capacitive", "sensor", "noise", "moving")),                      # 4/6, ties by id
        ("low", ("sensor", "esp32", "wifi", "battery")),                              # 1/9 < 0.3
        ("edge", ("capacitive", "sensor", "noise")),                                   # 3/6 = 0.5
        ("none", ("pizza",)),
        (n.concept_id, n.topic_terms),                                                 # itself: never a link
    ]  # fmt: skip
    assert links(n, ltm, CFG) == (("z-same", 1.0), ("a-half", pytest.approx(4 / 6)), ("b-half", pytest.approx(4 / 6)))
    assert [i for i, _ in links(n, ltm, ClamConfig(link_top_k=10))] == ["z-same", "a-half", "b-half", "edge"]
    assert [i for i, _ in links(n, ltm, ClamConfig(link_top_k=10, link_min_similarity=0.5))][-1] == "edge"  # >=
    assert [i for i, _ in links(n, ltm, ClamConfig(link_top_k=10, link_min_similarity=0.51))] == [
        "z-same", "a-half", "b-half"]  # fmt: skip
    assert links(n, ltm, ClamConfig(link_top_k=0)) == ()
    assert "none" not in dict(links(n, ltm, ClamConfig(link_top_k=10, link_min_similarity=0.0)))  # 0 shared: no link


def test_addresses_a_topic() -> None:
    n = node(text="User uses ESP32")
    assert addresses(n, topic_terms("Which ESP32 pins are safe?"))
    assert addresses(n, topic_terms("I use a Raspberry Pi"))  # "use" = "uses"
    assert not addresses(n, topic_terms("Tell me about the weather"))
    other = node(text="pizza in Naples", n=2)
    assert addressed([other, n], topic_terms("esp32 pizza")) == (n, other)
    assert addressed([other, n], topic_terms("esp32")) == (n,)


def test_topic_terms() -> None:
    assert topic_terms("The User uses an ESP32; I don't use Arduinos anymore!") == ("arduino", "esp32", "use")
    assert topic_terms("") == ()
    assert topic_terms("a an to of is 60 IP") == ()  # words under 3 characters are no topic
    assert topic_terms("port 8080, class, bus") == ("8080", "bus", "class", "port")  # no "s" folding on -ss, -us
