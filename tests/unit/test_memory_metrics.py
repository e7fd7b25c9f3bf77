"""The long-memory benchmark's metrics (``bench.memory_metrics``) on hand-built rankings with hand-computed values."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.figures import percentile
from bench.memory_corpus import parse_iso
from bench.memory_metrics import (
    Gold,
    RankedHit,
    Retrieval,
    abstained,
    any_hit_at,
    by_category,
    current_wins,
    future_leaks,
    label,
    ndcg_at,
    ranked_sessions,
    recall_at,
    score,
    value_matches,
)

QD = datetime(2026, 5, 1, 12, tzinfo=UTC)
BEFORE, AFTER = QD - timedelta(days=3), QD + timedelta(seconds=1)


def h(session: str | None, value: str | None = None, occurred: datetime | None = BEFORE,
      valid_from: datetime | None = None) -> RankedHit:  # fmt: skip
    return RankedHit(session, occurred, valid_from, value)


def test_ranked_sessions_are_distinct_in_first_seen_order_without_empty_ones() -> None:
    hits = [h("s3"), h(None), h("s1"), h("s3"), h(""), h("s2"), h("s1")]
    assert ranked_sessions(hits) == ["s3", "s1", "s2"]


def test_recall_and_any_hit() -> None:
    ranked = ["x", "e1", "y", "e2", "z"]
    ev = ["e1", "e2", "e3"]
    assert recall_at(ranked, ev, 1) == 0.0
    assert recall_at(ranked, ev, 2) == pytest.approx(1 / 3)
    assert recall_at(ranked, ev, 4) == pytest.approx(2 / 3)
    assert recall_at(ranked, ev, 10) == pytest.approx(2 / 3)
    assert any_hit_at(ranked, ev, 1) == 0.0
    assert any_hit_at(ranked, ev, 2) == 1.0
    assert recall_at(ranked, [], 5) is None and any_hit_at(ranked, [], 5) is None


def test_ndcg_binary_over_distinct_sessions() -> None:
    # DCG = 1/log2(3) + 1/log2(5) = 0.63093 + 0.43068; IDCG (3 relevant) = 1 + 1/log2(3) + 1/2
    got = ndcg_at(["x", "e1", "y", "e2"], ["e1", "e2", "e3"], 10)
    assert got == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3) + 0.5))
    assert got == pytest.approx(0.498189, abs=1e-6)
    assert ndcg_at(["e1", "e2"], ["e2", "e1"], 10) == pytest.approx(1.0)
    assert ndcg_at(["x", "e1"], ["e1"], 10) == pytest.approx(1 / math.log2(3))  # 0.63093
    assert ndcg_at(["x", "e1"], ["e1"], 1) == 0.0  # cut at k
    assert ndcg_at(["x"], [], 10) is None


def test_value_matching_is_whole_word_phrase_containment() -> None:
    assert value_matches("Kia Niro", "a Kia Niro")
    assert value_matches("lives in Porto, Portugal", "Porto")
    assert value_matches("PORTO", "porto.")
    assert not value_matches("Portobello", "Porto")
    assert not value_matches(None, "Porto") and not value_matches("Porto", None) and not value_matches("the", "a")


KU = Gold("knowledge-update", QD, ("old", "new"), answer="Porto", current_session_id="new", superseded_value="Lisbon")


def test_labels_by_value_first_then_by_session() -> None:
    assert label(h("old", "Porto"), KU) == "CURRENT"  # the value wins over the session
    assert label(h("new", "Lisbon"), KU) == "SUPERSEDED"
    assert label(h("new", "moved from Lisbon to Porto"), KU) == "CURRENT"  # both values: by session
    assert label(h("old", "software engineer"), KU) == "SUPERSEDED"  # neither value: by session
    assert label(h("new"), KU) == "CURRENT"
    assert label(h("other", "Lisbon"), KU) == "SUPERSEDED"
    assert label(h("other"), KU) is None and label(h(None), KU) is None


def test_current_wins() -> None:
    assert current_wins([h("x"), h("new"), h("old")], KU) is True
    assert current_wins([h("x"), h("old"), h("new")], KU) is False
    assert current_wins([h(None, "Porto"), h(None, "Lisbon")], KU) is True  # L2 facts
    assert current_wins([h(None, "Lisbon"), h(None, "Porto")], KU) is False
    assert current_wins([h("new")], KU) is True  # nothing superseded returned
    assert current_wins([h("x"), h("y")], KU) is False  # nothing current returned
    assert current_wins([], KU) is False
    assert current_wins([h("new")], Gold("single-session", QD, ("new",), "Porto")) is None
    assert current_wins([h("new")], Gold("knowledge-update", QD, ("new",), "Porto")) is None  # no current session


def test_current_wins_by_session_when_no_superseded_value_is_known() -> None:
    """LongMemEval's knowledge-update questions: the latest evidence session is the current one, no old value."""
    lme = Gold("knowledge-update", QD, ("old", "new"), answer="three bikes", current_session_id="new")
    assert current_wins([h("x"), h("new"), h("old")], lme) is True
    assert current_wins([h("old"), h("new")], lme) is False
    assert current_wins([h(None, "three bikes"), h("old")], lme) is True  # a fact with the answer's value
    assert current_wins([h(None, "two bikes"), h("old"), h("new")], lme) is False  # a fact of neither: not counted


def test_future_leaks_count_hits_after_the_question_date() -> None:
    hits = [h("a"), h("b", occurred=AFTER), h("c", occurred=BEFORE, valid_from=AFTER), h("d", occurred=QD),
            h("e", occurred=None), h("f", occurred=AFTER, valid_from=AFTER),
            h("g", occurred=datetime(2026, 5, 2))]  # fmt: skip  # naive = UTC
    assert future_leaks(hits, QD) == 4  # b, c, f, g; d is exactly at the date


def test_abstained_and_percentile() -> None:
    assert abstained(Retrieval((), confidence=0.9, abstained=True))
    assert abstained(Retrieval((), confidence=0.49))
    assert not abstained(Retrieval((), confidence=0.5))
    assert not abstained(Retrieval((), confidence=0.6), below=0.5)
    xs = [5.0, 1.0, 4.0, 2.0, 3.0, 10.0, 9.0, 8.0, 7.0, 6.0]
    assert percentile(xs, 0.5) == 6.0  # sorted[int(0.5 * 10)] = sorted[5]
    assert percentile(xs, 0.95) == 10.0 and percentile(xs, 0.99) == 10.0
    assert percentile(xs, 0.0) == 1.0
    assert math.isnan(percentile([], 0.5))


def test_score_aggregates_exactly() -> None:
    golds = [
        Gold("single-session", QD, ("s1",), "x"),
        Gold("multi-session", QD, ("m1", "m2"), "2"),
        KU,
        Gold("abstention", QD, (), "unknown"),
        Gold("abstention", QD, (), "unknown"),
    ]
    results = [
        Retrieval((h("s1"), h("z")), confidence=0.9),  # R@1 1, R@5 1, NDCG 1
        Retrieval((h("z"), h("m2", occurred=AFTER), h("q")), confidence=0.3),  # R@1 0, R@5 .5, leak 1, abstains
        Retrieval((h("old"), h("new")), confidence=0.8),  # R@1 .5, R@5 1, current loses
        Retrieval((h("z"),), confidence=0.2),  # abstains
        Retrieval((h("z", valid_from=AFTER),), confidence=0.9),  # answers; leak 1
    ]
    s = score(golds, results)
    assert s.n == 5
    assert s.recall[1] == pytest.approx((1 + 0 + 0.5) / 3)
    assert s.recall[5] == pytest.approx((1 + 0.5 + 1) / 3)
    assert s.any_hit[1] == pytest.approx(2 / 3) and s.any_hit[5] == pytest.approx(1.0)
    # NDCG@10: 1; (1/log2(3)) / (1 + 1/log2(3)); 1
    assert s.ndcg10 == pytest.approx((1 + (1 / math.log2(3)) / (1 + 1 / math.log2(3)) + 1) / 3)
    assert s.current_wins == 0.0 and s.current_n == 1
    assert (s.leaks, s.leaking_questions) == (2, 2)
    assert s.abstention == pytest.approx(0.5)
    assert s.false_abstention == pytest.approx(1 / 3)
    cats = by_category(golds, results, ("single-session", "multi-session", "knowledge-update", "temporal-reasoning",
                                        "abstention"))  # fmt: skip
    assert list(cats) == ["single-session", "multi-session", "knowledge-update", "abstention", "overall"]
    assert cats["multi-session"].recall[5] == pytest.approx(0.5) and cats["multi-session"].leaks == 1
    assert math.isnan(cats["abstention"].recall[5]) and cats["abstention"].abstention == pytest.approx(0.5)
    assert math.isnan(cats["single-session"].current_wins)
    with pytest.raises(ValueError):
        score(golds, results[:2])


class _FakeMemory:
    """Stands in for the SDK's MemoryClient: word-overlap search, honouring as_of except in "vector" mode (so that
    mode leaks the future)."""

    def __init__(self) -> None:
        self.episodes: dict[str, tuple[str, datetime, set[str]]] = {}

    def add(self, messages: list[dict[str, str]], *, session_id: str, occurred_at: str, episode_id: str,
            wait_ms: int) -> SimpleNamespace:  # fmt: skip
        words = set(" ".join(m["content"] for m in messages).lower().split())
        self.episodes[episode_id] = (session_id, parse_iso(occurred_at), words)
        return SimpleNamespace(episode_id=episode_id, status="STORED")

    def wait_indexed(self, ids: list[str], timeout_s: float) -> None:
        if any(i not in self.episodes for i in ids):
            raise TimeoutError("not yet")

    def search(self, query: str, *, k: int, as_of: str, mode: str) -> SimpleNamespace:
        q, at = set(query.lower().split()), parse_iso(as_of)
        ranked = sorted(((len(q & w), sid, t) for sid, t, w in self.episodes.values() if mode == "vector" or t <= at),
                        reverse=True)[:k]  # fmt: skip
        hits = [SimpleNamespace(session_id=sid, occurred_at=t, valid_from=None, fact_value=None, layer=4,
                                status="CURRENT", similarity=n / max(len(q), 1), text=sid)
                for n, sid, t in ranked]  # fmt: skip
        return SimpleNamespace(hits=hits, confidence=0.9, abstained=False, latency_ms=1.0)

    def close(self) -> None:
        pass


def test_harness_runs_end_to_end_on_a_fake_memory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import bench.memory as bm

    @contextlib.contextmanager
    def no_stack(existing: bool) -> Iterator[tuple[None, str, dict[str, int]]]:
        yield None, "t", {}

    monkeypatch.setattr(bm, "stack", no_stack)
    monkeypatch.setattr(bm, "open_memories", lambda settings, tenant, users: {u: _FakeMemory() for u in users})
    monkeypatch.setattr(bm, "l0_lookups", lambda settings, tenant, corpus: [0.2] * len(corpus.questions))
    replayed: list[str] = []

    def fake_replay(settings: object, model: str, console: object) -> str:
        replayed.append(model)
        return "replayed"

    monkeypatch.setattr(bm, "timed_replay", fake_replay)

    class Letters:  # the baseline's embedder: letter counts (no model to load)
        model_id = "letters/1"
        embedded = 0

        def embed(self, texts: list[str]) -> list[list[float]]:
            Letters.embedded += len(texts)
            return [self.embed_query(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return [text.lower().count(c) + 0.01 for c in "abcdefghijklmnopqrstuvwxyz"]

    monkeypatch.setattr("inference.embeddings.embedder_from_env", lambda env: Letters())
    out = tmp_path / "memory.txt"
    dump = tmp_path / "dump.jsonl"
    cache = tmp_path / "cache" / "vectors.sqlite"  # never the user's ~/.cache
    argv = ["--users", "2", "--modes", "text,vector", "--probes", "3", "--out", str(out), "--dump", str(dump),
            "--baseline-cache", str(cache)]  # fmt: skip
    assert bm.main(argv) == 0
    assert Letters.embedded > 0 and "(0 of them read from the vector cache" in out.read_text()
    first, Letters.embedded = out.read_text(), 0
    assert bm.main(argv) == 0  # the same corpus again: the baseline's vectors come from the cache
    assert Letters.embedded == 0 and " of them read from the vector cache " in out.read_text()
    baseline_table = [line for line in out.read_text().splitlines() if "baseline RRF" in line]
    assert baseline_table == [line for line in first.splitlines() if "baseline RRF" in line]
    text = out.read_text()
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    assert {x["mode"] for x in lines} == {"text", "vector"}  # each hit as ranked, with what ranked it
    assert any(h["similarity"] > 0 and h["text"] == h["session"] for x in lines for h in x["hits"])
    assert "2 users, 80 sessions" in text and "L4 write latency, 3 held-back sessions" in text
    assert "mode text" in text and "mode vector" in text and "point-in-time" in text
    assert "L0 lookup" in text and "p50 0.20 ms" in text  # the routing step's latency, one per question
    assert "80 episodes in" in text  # the local consolidator's own rate, over every session of the corpus
    assert replayed == ["kmms", "kmms"] and "KMMS read model rebuilt from the log" in text  # once a run
    assert "HiveMem beside the baseline" in text and "HiveMem text " in text and "baseline RRF" in text
    assert "search latency, HiveMem vector: client p50" in text  # per mode, beside the comparison
    assert "0. baseline (bench/memory_baseline.py): " in text
    rows = [line for line in text.splitlines() if "│ overall" in line and "HiveMem" not in line]
    assert len(rows) == 2
    # each mode's derived nodes scored apart, by the sessions they cite (the fake server lists none)
    assert text.count("context (derived nodes, by the sessions they cite), overall: R@5 ") == 2
    assert "│     0 (0) │" in rows[0]  # as_of honoured: no leak
    assert "│     0 (0) │" not in rows[1]  # the fake's vector mode ignores as_of
