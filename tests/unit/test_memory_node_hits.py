"""Checker-style scoring of ``hivemem bench memory``: an L1-L3 node hit counts for the sessions of the episodes it
cites (``bench.memory_metrics.cited_sessions``, ``bench.memory_sdk.sdk_search``), or for none with
``--node-hits skip``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from bench.memory_corpus import Question
from bench.memory_metrics import Gold, RankedHit, Retrieval, cited_episodes, cited_sessions, ranked_sessions, score
from bench.memory_sdk import sdk_search
from producers.memory_client import SearchResult, _ms_fields

SESSIONS = {"ep-a": "s-a", "ep-b": "s-b", "ep-c": "s-c", "ep-d": "s-d"}


def test_node_ids_resolve_depth_first_down_to_episodes() -> None:
    nodes = {"l3-1": ["ep-b", "ep-a"], "l3-2": ["ep-c", "ep-b"], "l2-1": ["l3-2", "l3-1"], "loop": ["loop", "ep-d"]}
    assert cited_episodes(["l2-1"], nodes) == ["ep-c", "ep-b", "ep-a"]
    assert cited_episodes(["loop"], nodes) == ["ep-d"]  # a cycle adds nothing
    assert cited_sessions(["l2-1"], nodes, SESSIONS) == ("s-c", "s-b", "s-a")
    # a node the result does not hold, or an episode of no known session, counts for nothing
    assert cited_sessions(["l3-unknown", "ep-x", "ep-d"], nodes, SESSIONS) == ("s-d",)


def test_a_node_hit_counts_for_its_sessions_in_rank_order() -> None:
    hits = [RankedHit("s-a"), RankedHit(None, layer=2, cited=("s-c", "s-a", "s-b")), RankedHit("s-d")]
    assert ranked_sessions(hits) == ["s-a", "s-c", "s-b", "s-d"]
    gold = Gold("multi-hop", datetime(2024, 1, 1, tzinfo=UTC), ("s-b", "s-d"))
    with_nodes = score([gold], [Retrieval(tuple(hits))], ks=(2, 3, 4))
    skipped = score([gold], [Retrieval((hits[0], RankedHit(None, layer=2), hits[2]))], ks=(2, 3, 4))
    assert with_nodes.recall == {2: 0.0, 3: 0.5, 4: 1.0}
    assert skipped.recall == {2: 0.5, 3: 0.5, 4: 0.5}


def _hit(layer: int, node_id: str, **kw: Any) -> dict[str, Any]:
    return {"layer": layer, "nodeId": node_id, "score": 0.1, "similarity": 0.5, "confidence": 0.8, "hedging": None,
            "layerMeaning": "", "modifiers": [], "text": node_id, **kw}  # fmt: skip


class FakeMemory:
    def __init__(self, result: Any) -> None:
        self.result = result
        self.asked: list[tuple[str, int, Any, str]] = []

    def search(self, query: str, k: int = 5, *, as_of: Any = None, mode: str = "hybrid") -> Any:
        self.asked.append((query, k, as_of, mode))
        return self.result


def _result(context: list[dict[str, Any]] | None = None, node_sessions: list[str] | None = None) -> Any:
    # the server's answer as it sends it (contracts/kmms_views.py), times in ms
    data = {"query": "q", "asOf": 1_706_745_600_000, "windowStart": None, "windowEnd": None, "temporalCues": [],
            "temporalIntent": "UNSPECIFIED", "entities": [], "answerLayer": 2, "confidence": 0.8,
            "hedgingPrefix": None, "layerMeaning": None, "abstained": False, "supersededFallback": False,
            "drill": [], "provenance": [], "latencyMs": 4.5,
            "hits": [_hit(2, "fact-1", sourceIds=["sum-1", "sum-2"], factValue="Porto",
                          sessionIds=node_sessions or []),
                     _hit(4, "ep-d", episodeId="ep-d", sessionId="s-d"),
                     _hit(3, "sum-1", sourceIds=["ep-b", "ep-a"]),
                     _hit(1, "abs-1", sourceIds=["fact-1", "ep-x"])]}  # fmt: skip
    return SearchResult.model_validate(_ms_fields(data | {"context": context or []}))


QUESTION = Question("q1", "u", "Where do I live?", "2024-02-01T00:00:00Z", "Porto", ["s-c"], "single-hop")


def test_sdk_search_cites_the_sessions_of_the_nodes_it_can_resolve() -> None:
    mem = FakeMemory(_result())
    res, server = sdk_search(mem, QUESTION, 50, "hybrid", SESSIONS)
    assert mem.asked == [("Where do I live?", 50, "2024-02-01T00:00:00Z", "hybrid")] and server == 4.5
    # fact-1 cites sum-1 (held: ep-b, ep-a) and sum-2 (not held: dropped); abs-1 cites fact-1 and an unknown id
    assert [h.cited for h in res.hits] == [("s-b", "s-a"), (), ("s-b", "s-a"), ("s-b", "s-a")]
    assert ranked_sessions(res.hits) == ["s-b", "s-a", "s-d"]


def test_the_results_context_resolves_nodes_but_is_not_ranked() -> None:
    context = [_hit(3, "sum-2", sourceIds=["ep-c"])]  # a derived node the result lists beside its hits
    res, _ = sdk_search(FakeMemory(_result(context)), QUESTION, 50, "hybrid", SESSIONS)
    assert res.hits[0].cited == ("s-b", "s-a", "s-c")
    assert ranked_sessions(res.hits) == ["s-b", "s-a", "s-c", "s-d"]
    assert len(res.hits) == 4  # the context adds no hit
    # scored apart: the context by the sessions each of its nodes cites (bench.memory_report.context_recall)
    assert [h.cited for h in res.context] == [("s-c",)]
    assert ranked_sessions(res.context) == ["s-c"]


@pytest.mark.parametrize("context", [None, [_hit(3, "sum-2", sourceIds=["ep-c"])]])
def test_skip_counts_l4_hits_only(context: list[dict[str, Any]] | None) -> None:
    res, _ = sdk_search(FakeMemory(_result(context)), QUESTION, 10, "vector", SESSIONS, nodes="skip")
    assert [h.cited for h in res.hits] == [(), (), (), ()]
    assert ranked_sessions(res.hits) == ["s-d"]
    assert ranked_sessions(res.context) == (["s-c"] if context else [])  # the context is always read by citation


def test_a_node_hits_own_session_ids_come_first() -> None:
    res, _ = sdk_search(FakeMemory(_result(node_sessions=["s-d", "s-c", "s-d"])), QUESTION, 50, "hybrid", SESSIONS)
    assert res.hits[0].cited == ("s-d", "s-c")  # as the server resolved them, once each
    assert ranked_sessions(res.hits) == ["s-d", "s-c", "s-b", "s-a"]


def test_the_sdk_shows_the_servers_ms_times_as_datetimes() -> None:
    res = _result([_hit(3, "sum-2", sourceIds=["ep-c"], occurredAt=1_706_745_600_000)])
    assert res.as_of == datetime(2024, 2, 1, tzinfo=UTC)
    assert res.context[0].occurred_at == datetime(2024, 2, 1, tzinfo=UTC) and res.hits[1].occurred_at is None
