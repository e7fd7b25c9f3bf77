"""The plain baseline of ``hivemem bench memory`` (``bench.memory_baseline``) on a toy corpus, with a bag-of-words
embedder in place of MiniLM: max-sim per session, BM25 per session, reciprocal-rank fusion, the asOf cut."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import pytest

from bench.memory_baseline import SYSTEMS, best_per_session, rrf, run, session_units, tokens
from bench.memory_compare import compare, table, verdicts
from bench.memory_corpus import Corpus, Question, Session, Turn, User
from bench.memory_metrics import RankedHit, Retrieval

VOCAB = ("pottery", "river", "dog", "greyhound", "rain", "train", "cake", "studio")


class BagOfWords:
    """One dimension per ``VOCAB`` word (counts); a text without any gets the last, unrelated dimension."""

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def _vec(self, text: str) -> list[float]:
        words = re.findall(r"[a-z]+", text.lower())
        v = [float(words.count(w)) for w in VOCAB] + [0.0]
        if not any(v):
            v[-1] = 1.0
        return v

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.embedded += texts
        return [self._vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vec(text)


def session(sid: str, day: int, *lines: str) -> Session:
    turns = [Turn("user" if i % 2 == 0 else "assistant", x) for i, x in enumerate(lines)]
    return Session(sid, "u", f"2024-01-{day:02d}T10:00:00Z", turns)


def corpus(*questions: Question) -> Corpus:
    sessions = [
        # one round very close to "pottery studio" among unrelated ones: max-sim ranks it first
        session("s1", 1, "the rain again", "sorry to hear", "train delays", "ugh", "pottery studio by the river", "ok"),
        # every round a little close: a mean would rank it first, the max does not
        session("s2", 2, "pottery cake rain", "nice", "studio cake train", "sure"),
        # nothing in common with the question's words
        session("s3", 3, "a greyhound dog", "cute"),
        # after the question's asOf: never a candidate
        session("s4", 9, "pottery studio pottery studio", "wow"),
    ]
    return Corpus(0, [User("u", "2024-01-09T10:00:00Z", sessions)], list(questions), "toy")


def question(text: str, evidence: list[str], category: str = "single-hop") -> Question:
    return Question("q", "u", text, "2024-01-05T00:00:00Z", "", evidence, category)


def test_units_are_hivemems_rounds_without_role_prefixes() -> None:
    s = session("s", 1, "I took up pottery", "Great!", "Where is the studio?", "By the river.")
    assert session_units(s) == ["I took up pottery\nGreat!", "Where is the studio?\nBy the river."]


def test_tokens_lowercase_words_without_stop_words() -> None:
    assert tokens("Where's my Greyhound, and what did I bake in 2023?") == ["greyhound", "bake", "2023"]


def test_rrf_sums_reciprocal_ranks_with_k_60() -> None:
    # 0: 1/61; 1: 1/62 + 1/62 = 0.032258; 2: 1/63 + 1/61 = 0.032266
    assert rrf([[0, 1, 2], [2, 1]]) == [2, 1, 0]
    assert rrf([[0, 1], [1, 0]]) == [0, 1]  # a tie goes to the first ranking's order
    assert rrf([[5, 6], []]) == [5, 6]
    # k matters: 1: 2/62 = 0.032258 beats 3: 1/64 + 1/61 = 0.032018; with k = 1, 3: 1/5 + 1/2 beats 1: 1/3 + 1/3
    assert rrf([[0, 1, 2, 3], [3, 1]]) == [1, 3, 0, 2]
    assert rrf([[0, 1, 2, 3], [3, 1]], k=1) == [3, 1, 0, 2]


def test_best_per_session_is_the_max() -> None:
    assert best_per_session([0.1, 0.9, 0.3, 0.2], [0, 0, 1, 1], 3) == [0.9, 0.3, -math.inf]


def test_max_sim_fusion_and_the_as_of_cut() -> None:
    q = question("Where is the pottery studio?", ["s1"])
    emb = BagOfWords()
    base = run(corpus(q), emb)
    ranked = {name: [h.session_id for h in res[0].hits] for name, res in base.results.items()}
    # cosine: s1's last round (pottery studio river) 2/sqrt(2*3) = 0.816, s2's best round 1/sqrt(2*3) = 0.408
    # each, s3's 0; s4 (2024-01-09) is after asOf (2024-01-05)
    assert ranked["vector"] == ["s1", "s2", "s3"]
    assert ranked["bm25"][0] == "s1" and "s3" not in ranked["bm25"]  # no question word: not ranked by text
    assert ranked["fused"] == ["s1", "s2", "s3"]
    assert set(SYSTEMS) == set(ranked)
    assert base.units == 7 and base.distinct_texts == 7 and sorted(emb.embedded) == sorted(set(emb.embedded))
    assert all(h.occurred_at is not None for h in base.results["fused"][0].hits)


def test_fusion_when_the_halves_disagree() -> None:
    # "delays" is no embedder word: by vector only "cake" counts (s2 first, s1 and s3 at 0 in time order); by BM25
    # the rare "delays" of s1 outweighs the commoner "cake" of s2, and s3 has neither
    q = question("delays cake", ["s1"])
    ranked = {n: [h.session_id for h in r[0].hits] for n, r in run(corpus(q), BagOfWords()).results.items()}
    assert ranked["vector"] == ["s2", "s1", "s3"]
    assert ranked["bm25"] == ["s1", "s2"]
    assert ranked["fused"] == ["s2", "s1", "s3"]  # s1 and s2 tie at 1/61 + 1/62: the vector ranking's order


def test_a_session_sent_as_several_episodes_is_one_session() -> None:
    # s1 posted turn by turn (each round its own episode, one session id), one more round of it after asOf; s2 once
    q = question("Where is the pottery studio?", ["s1"])
    rounds = [("the rain again", "sorry to hear", 1), ("pottery studio by the river", "ok", 1),
              ("pottery studio pottery studio", "wow", 9)]  # fmt: skip
    s1 = [Session("s1", "u", f"2024-01-{day:02d}T10:{i:02d}:00Z", [Turn("user", a), Turn("assistant", b)])
          for i, (a, b, day) in enumerate(rounds)]  # fmt: skip
    sessions = [*s1, session("s2", 2, "pottery cake rain", "nice", "studio cake train", "sure")]
    c = Corpus(0, [User("u", "2024-01-09T10:00:00Z", sessions)], [q], "toy")
    base = run(c, BagOfWords())
    hits = base.results["vector"][0].hits
    # one hit per session; s1's is its first episode's; its best unit is the round of 2024-01-01 (the one of
    # 2024-01-09, closer still, is after asOf), at 0.816, above s2's 0.408
    assert [h.session_id for h in hits] == ["s1", "s2"]
    assert hits[0].occurred_at is not None and hits[0].occurred_at.day == 1
    assert base.units == 5  # three rounds of s1 (one an episode after asOf, cut but never ranked), two of s2
    late_only = Corpus(0, [User("u", "2024-01-09T10:00:00Z", [s1[2], sessions[-1]])], [q], "toy")
    assert [h.session_id for h in run(late_only, BagOfWords()).results["fused"][0].hits] == ["s2"]


def test_side_by_side_rows_and_verdict() -> None:
    from bench.memory_report import gold

    qs = [question("a", ["s1"], "temporal"), question("b", ["s2"], "single-hop"), question("c", [], "single-hop")]
    golds = [gold(q) for q in qs]

    def ret(*sessions: str) -> Retrieval:
        return Retrieval(tuple(RankedHit(s) for s in sessions))

    systems: dict[str, Sequence[Retrieval | None]] = {
        "HiveMem hybrid": [ret("s1"), ret("s2"), ret()],
        "HiveMem text": [ret("x", "x2", "x3", "x4", "x5", "s1"), None, ret()],
        "baseline RRF": [ret("s1"), ret("x", "s2"), ret()],
    }
    rows = compare(golds, systems, ["temporal", "single-hop"])
    assert rows["HiveMem hybrid"]["overall"].n == 2  # the question without evidence is not scored
    assert rows["HiveMem text"]["overall"].n == 1 and "single-hop" not in rows["HiveMem text"]
    assert rows["baseline RRF"]["overall"].scores.recall[5] == 1.0
    assert rows["baseline RRF"]["single-hop"].scores.ndcg10 == pytest.approx(1 / math.log2(3))
    lines = verdicts(rows)
    assert lines[0].startswith("HiveMem hybrid ties with baseline RRF on recall@5 by 0.0 points")
    assert "NDCG@10 +0.185" in lines[0]  # (1 + 1) / 2 - (1 + 0.631) / 2
    assert lines[1].startswith("HiveMem text trails baseline RRF on recall@5 by 100.0 points")
    assert table(rows, 50).row_count == 3 + 3 + 2  # overall, temporal (3 systems each), single-hop (2)


def test_knowledge_updates_are_compared_by_which_session_comes_first() -> None:
    from dataclasses import replace

    from bench.memory_report import gold

    ku = replace(question("where now?", ["old", "new"], "knowledge-update"), current_session_id="new")
    golds = [gold(ku), gold(question("b", ["s2"]))]
    systems: dict[str, Sequence[Retrieval | None]] = {
        "HiveMem hybrid": [Retrieval((RankedHit("x"), RankedHit("new"), RankedHit("old"))), Retrieval(())],
        "baseline RRF": [Retrieval((RankedHit("old"), RankedHit("new"))), Retrieval((RankedHit("s2"),))],
    }
    rows = compare(golds, systems, ["knowledge-update", "single-hop"])
    assert rows["HiveMem hybrid"]["knowledge-update"].scores.current_wins == 1.0
    assert rows["baseline RRF"]["knowledge-update"].scores.current_wins == 0.0
    t = table(rows, 50)
    assert t.columns[-1].header == "cur>sup"
    assert list(t.columns[-1].cells)[:2] == ["100.0% (1)", "0.0% (1)"]
    assert list(t.columns[-1].cells)[2] == "-"  # single-hop: no update to order
    plain = compare([gold(question("b", ["s2"]))], {"baseline RRF": [Retrieval((RankedHit("s2"),))]}, ["single-hop"])
    assert table(plain, 50).columns[-1].header == "dNDCG@10"  # no knowledge update: no column
