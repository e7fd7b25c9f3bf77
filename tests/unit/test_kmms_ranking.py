"""The search's first-stage ranking as a pure function over what SQL fetched (governance.kmms.ranking.fuse): the
vectors' rows count each unit once at its best vector, the two rankings are fused by reciprocal rank with full text's
weight, the episode model orders episodes when both ran, and the result is cut to ``n``."""

from __future__ import annotations

from dataclasses import replace

from governance.kmms.episode_rank import rank_by_episode
from governance.kmms.fusion import rrf
from governance.kmms.ranking import Fetched, fuse, fusion_weights
from governance.kmms.search_config import DEFAULT

OFF = replace(DEFAULT, episode_model=False)
# a#0's own vector and one of its sentences' (a#0~s1) both rank; its unit counts once, at its best (first) row.
NEAREST = [("a#0", 0.20), ("b#1", 0.25), ("a#0", 0.30), ("c#0", 0.40), ("d#2", 0.50)]
TEXT = [("c#0", 9.0), ("e#0", 7.0), ("a#0", 3.0)]


def test_each_unit_counts_once_at_its_best_vector() -> None:
    assert Fetched(NEAREST, None).best_distances == {"a#0": 0.20, "b#1": 0.25, "c#0": 0.40, "d#2": 0.50}
    assert [u for u, _ in fuse(Fetched(NEAREST, None), "vector", 10, OFF)] == ["a#0", "b#1", "c#0", "d#2"]


def test_hybrid_is_the_weighted_reciprocal_rank_fusion_of_both() -> None:
    cfg = replace(OFF, text_weight=2.0, rrf_k=10)
    got = fuse(Fetched(NEAREST, TEXT), "hybrid", 10, cfg)
    assert got == rrf([["a#0", "b#1", "c#0", "d#2"], ["c#0", "e#0", "a#0"]], 10, [1.0, 2.0])
    assert got[0][0] == "c#0"  # first by full text at twice the weight, third by vectors
    assert fusion_weights([["x"], ["y"]], "hybrid", 2.0) == [1.0, 2.0]
    assert fusion_weights([["x"]], "hybrid", 2.0) is None


def test_the_episode_model_orders_episodes_when_both_rankings_ran() -> None:
    with_model = fuse(Fetched(NEAREST, TEXT), "hybrid", 10, DEFAULT)
    fused = rrf([["a#0", "b#1", "c#0", "d#2"], ["c#0", "e#0", "a#0"]], DEFAULT.rrf_k, [1.0, DEFAULT.text_weight])
    similar = [("a#0", 0.80), ("b#1", 0.75), ("c#0", 0.60), ("d#2", 0.50)]
    assert with_model == rank_by_episode(fused, similar, TEXT, DEFAULT.rrf_k)
    assert all(0.0 < s < 1.0 for _, s in with_model)  # probabilities, not reciprocal ranks
    # One ranking only (text mode, or no question vector): no model, the plain fusion.
    assert fuse(Fetched(None, TEXT), "text", 10, DEFAULT) == rrf([["c#0", "e#0", "a#0"]], DEFAULT.rrf_k)


def test_cut_to_n_and_nothing_fetched_is_nothing() -> None:
    assert len(fuse(Fetched(NEAREST, TEXT), "hybrid", 2, DEFAULT)) == 2
    # The vectors' ranking itself is cut to n before the fusion: d#2, 4th by vectors, is not among 3 of them.
    assert "d#2" not in dict(fuse(Fetched(NEAREST, None), "vector", 3, OFF))
    assert fuse(Fetched(None, None), "hybrid", 5, DEFAULT) == []
    assert fuse(Fetched([], []), "hybrid", 5, DEFAULT) == []


def test_the_late_reading_reads_the_fused_rankings_first_rounds_and_counts_only_when_each_has_states() -> None:
    import numpy as np

    from governance import token_states as ts
    from governance.kmms.ranking import fused_ranking, late_candidates, ranked

    fetched = Fetched(NEAREST, TEXT)
    first = fused_ranking(fetched, "hybrid", 10, DEFAULT)
    candidates = late_candidates(first)
    assert candidates == [u for u, _ in first[0]]  # fewer than CANDIDATES: every fused unit
    assert late_candidates(fused_ranking(fetched, "hybrid", 10, OFF)) == []  # no episode model, no reading
    rng = np.random.default_rng(3)
    question = ts.project(rng.standard_normal((3, ts.MODEL_DIM)).astype(np.float32))
    # e#0's states match the question's: read word by word, its episode rises.
    states = {u: ts.encode(rng.standard_normal((4, ts.MODEL_DIM)).astype(np.float32)) for u in candidates}
    states["e#0"] = ts.encode(question @ ts.projection().T)
    with_late = ranked(fetched, first, 10, DEFAULT, (question, states))
    without = ranked(fetched, first, 10, DEFAULT)
    assert without == fuse(fetched, "hybrid", 10, DEFAULT)
    assert [u for u, _ in with_late].index("e#0") < [u for u, _ in without].index("e#0")
    missing = {u: s for u, s in states.items() if u != candidates[-1]}
    assert ranked(fetched, first, 10, DEFAULT, (question, missing)) == without  # one candidate without: not read
