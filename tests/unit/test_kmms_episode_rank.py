"""Episodes ranked by the learned score over both first-stage rankings (governance/kmms/episode_rank.py)."""

from __future__ import annotations

import math

import pytest

from governance.kmms.episode_rank import LOCOMO_WEIGHTS, EpisodeWeights, episode_features, rank_by_episode
from governance.kmms.fusion import rrf

K = 10


def _fused(vector: list[str], text: list[str]) -> list[tuple[str, float]]:
    return rrf([vector, text], K, [1.0, 1.0])


def test_features_are_read_off_the_two_rankings() -> None:
    similar = [("a#0", 0.80), ("b#0", 0.70), ("a#1", 0.60)]
    bm25 = [("b#0", 8.0), ("a#1", 4.0), ("b#1", 2.0)]
    fused = _fused([u for u, _ in similar], [u for u, _ in bm25])
    f = episode_features(fused, similar, bm25, K)
    a, b = f["a"], f["b"]
    # a: a#0 first by vector (1/11), a#1 third by vector and second by text (1/13 + 1/12).
    assert a.fused1 == pytest.approx(1 / 13 + 1 / 12) and a.fused2 == pytest.approx(1 / 11)
    assert (a.bm1, a.bm2) == (pytest.approx(0.5), 0.0)  # its best BM25 over the best candidate's (8)
    assert a.cos_gap == 0.0 and a.vector_rank == pytest.approx(1 / 11) and a.text_rank == pytest.approx(1 / 12)
    assert (b.bm1, b.bm2) == (1.0, pytest.approx(0.25))
    assert b.cos_gap == pytest.approx(-0.10) and b.text_rank == pytest.approx(1 / 11)


def test_an_episode_missing_from_the_vectors_counts_their_lowest_similarity() -> None:
    similar = [("a#0", 0.80), ("b#0", 0.40)]
    bm25 = [("c#0", 3.0)]
    fused = _fused([u for u, _ in similar], [u for u, _ in bm25])
    c = episode_features(fused, similar, bm25, K)["c"]
    assert c.cos_gap == pytest.approx(0.40 - 0.80) and c.vector_rank == 0.0 and c.bm1 == 1.0


def test_without_full_text_the_text_features_are_zero() -> None:
    similar = [("a#0", 0.8), ("b#0", 0.7)]
    f = episode_features(rrf([["a#0", "b#0"]], K), similar, [], K)
    assert all((x.bm1, x.bm2, x.text_rank) == (0.0, 0.0, 0.0) for x in f.values())


def test_an_episode_two_of_whose_units_match_passes_one_with_a_single_slightly_better_unit() -> None:
    # "solo" holds the best unit of each ranking's second place; "pair" holds two units close behind, one of them
    # first by full text. By its best unit alone (the reciprocal-rank fusion) solo leads; the model puts pair first.
    vector = ["solo#0", "pair#0", "x#0", "pair#1", "y#0"]
    text = ["pair#1", "solo#0", "z#0", "pair#0"]
    similar = [("solo#0", 0.62), ("pair#0", 0.61), ("x#0", 0.50), ("pair#1", 0.49), ("y#0", 0.40)]
    bm25 = [("pair#1", 6.0), ("solo#0", 5.9), ("z#0", 2.0), ("pair#0", 1.5)]
    fused = _fused(vector, text)
    assert fused[0][0] == "solo#0"
    ranked = rank_by_episode(fused, similar, bm25, K)
    assert ranked[0][0].split("#")[0] == "pair"
    assert [u for u, _ in ranked].index("pair#1") < [u for u, _ in ranked].index("solo#0")


def test_each_unit_keeps_its_place_within_its_episode_and_the_best_scores_the_probability() -> None:
    vector, text = ["a#0", "b#0", "a#1", "c#0"], ["a#1", "b#1", "c#0"]
    similar = [("a#0", 0.7), ("b#0", 0.6), ("a#1", 0.5), ("c#0", 0.3)]
    bm25 = [("a#1", 4.0), ("b#1", 3.0), ("c#0", 1.0)]
    fused = _fused(vector, text)
    ranked = rank_by_episode(fused, similar, bm25, K)
    assert sorted(u for u, _ in ranked) == sorted(u for u, _ in fused)  # every unit once
    assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)
    place = [u for u, _ in fused]
    for e in ("a", "b"):
        mine = [u for u, _ in ranked if u.startswith(e + "#")]
        assert mine == sorted(mine, key=place.index)  # an episode's units in their fused order
    feats = episode_features(fused, similar, bm25, K)
    best = {u.split("#")[0]: s for u, s in reversed(ranked)}
    for e, f in feats.items():
        assert 0.0 < best[e] < 1.0
        assert best[e] == pytest.approx(1 / (1 + math.exp(-f.score(LOCOMO_WEIGHTS))))


def test_the_order_follows_the_weights_and_ties_go_by_episode_id() -> None:
    vector, text = ["a#0", "b#0"], ["b#0", "a#0"]
    similar, bm25 = [("a#0", 0.5), ("b#0", 0.5)], [("b#0", 2.0), ("a#0", 2.0)]
    fused = _fused(vector, text)
    flat = EpisodeWeights(0, 0, 0, 0, 0, 0, 0, intercept=0)
    assert [u for u, _ in rank_by_episode(fused, similar, bm25, K, flat)] == ["a#0", "b#0"]
    by_text = EpisodeWeights(0, 0, 0, 0, 0, 5.0, 0, intercept=0)  # first by full text: b
    assert [u for u, _ in rank_by_episode(fused, similar, bm25, K, by_text)] == ["b#0", "a#0"]
    assert rank_by_episode([], [], [], K) == []


@pytest.mark.parametrize("intercept", [-1000.0, 1000.0])
def test_log_odds_out_of_exps_range_rank_without_overflow(intercept: float) -> None:
    vector, text = ["a#0", "b#0"], ["b#0", "a#0"]
    similar, bm25 = [("a#0", 0.9), ("b#0", 0.5)], [("b#0", 2.0), ("a#0", 1.0)]
    extreme = EpisodeWeights(0, 0, 0, 0, 0, 0, 0, intercept=intercept)
    ranked = rank_by_episode(_fused(vector, text), similar, bm25, K, extreme)
    assert sorted(u for u, _ in ranked) == ["a#0", "b#0"]
    assert all(0.0 < s <= 1.0 for _, s in ranked)
