"""CAML recall composite score (eq. 1) with the seed's test vectors, clamping, and ranking."""

from __future__ import annotations

import math
from dataclasses import dataclass

import hypothesis.strategies as st
import pytest
from hypothesis import given

from governance.caml.recall_score import W_AGE, W_REP, W_SIM, W_VAL, age_days, composite, rank, score_parts


def test_weights() -> None:
    assert (W_SIM, W_REP, W_VAL, W_AGE) == (0.45, 0.25, 0.20, 0.10)
    assert math.isclose(W_SIM + W_REP + W_VAL + W_AGE, 1.0)


def test_seed_vectors() -> None:
    assert score_parts(0, 100, 0, 0, 0).reputation == pytest.approx(0.25, abs=1e-12)
    assert score_parts(0, 0, 0, 0, 0).reputation == 0.0
    assert score_parts(0, 0, 0, 0, 0).validation == 0.0
    assert score_parts(0, 0, 3, 0, 0).validation == pytest.approx(0.15, abs=1e-12)
    assert score_parts(0, 0, 0, 0, 0).recency == pytest.approx(0.10, abs=1e-12)
    assert round(score_parts(0, 0, 0, 0, 60).recency, 4) == 0.0368


def test_full_formula() -> None:
    sim, r, v, f, d = 0.8, 42.0, 5, 2, 12.5
    expected = (0.45 * sim + 0.25 * math.log(1 + r) / math.log(101) + 0.20 * v / (v + f + 1)
                + 0.10 * math.exp(-d / 60))  # fmt: skip
    assert composite(sim, r, v, f, d) == pytest.approx(expected, abs=1e-12)
    p = score_parts(sim, r, v, f, d)
    assert p.total == pytest.approx(p.sim + p.reputation + p.validation + p.recency, abs=1e-15)
    assert p.sim == pytest.approx(0.36)


def test_perfect_and_null_scores() -> None:
    assert composite(1.0, 100, 10**9, 0, 0) == pytest.approx(1.0, abs=1e-8)
    assert composite(0.0, 0, 0, 0, math.inf) == 0.0


@pytest.mark.parametrize(
    ("args", "same_as"),
    [
        ((-0.7, 50, 1, 1, 3.0), (0.0, 50, 1, 1, 3.0)),  # negative cosine counts as unrelated
        ((1.3, 50, 1, 1, 3.0), (1.0, 50, 1, 1, 3.0)),
        ((math.nan, 50, 1, 1, 3.0), (0.0, 50, 1, 1, 3.0)),
        ((0.5, -10, 1, 1, 3.0), (0.5, 0, 1, 1, 3.0)),
        ((0.5, 250, 1, 1, 3.0), (0.5, 100, 1, 1, 3.0)),
        ((0.5, 50, -3, 1, 3.0), (0.5, 50, 0, 1, 3.0)),
        ((0.5, 50, 2, -4, 3.0), (0.5, 50, 2, 0, 3.0)),
        ((0.5, 50, 1, 1, -2.0), (0.5, 50, 1, 1, 0.0)),  # logged after now: brand new, not fresher
    ],
)
def test_inputs_are_clamped(
    args: tuple[float, float, int, int, float], same_as: tuple[float, float, int, int, float]
) -> None:
    assert composite(*args) == composite(*same_as)


@given(
    st.floats(allow_nan=True), st.floats(allow_nan=True), st.integers(-5, 10**6), st.integers(-5, 10**6),
    st.floats(allow_nan=True),
)  # fmt: skip
def test_score_is_in_unit_interval(sim: float, r: float, v: int, f: int, d: float) -> None:
    s = composite(sim, r, v, f, d)
    assert 0.0 <= s <= 1.0 + 1e-12


@given(st.floats(0, 1), st.floats(0, 100), st.integers(0, 100), st.integers(0, 100), st.floats(0, 1000))
def test_monotone_in_each_term(sim: float, r: float, v: int, f: int, d: float) -> None:
    base = composite(sim, r, v, f, d)
    assert composite(min(1.0, sim + 0.1), r, v, f, d) >= base
    assert composite(sim, min(100.0, r + 1), v, f, d) >= base
    assert composite(sim, r, v + 1, f, d) >= base
    assert composite(sim, r, v, f + 1, d) <= base
    assert composite(sim, r, v, f, d + 1) <= base


def test_age_days() -> None:
    assert age_days(0, 86_400_000) == 1.0
    assert age_days(0, 43_200_000) == 0.5
    assert age_days(10, 0) < 0


@dataclass(frozen=True)
class Cand:
    id: str
    score: float


def test_rank_descending_and_stable_without_tie_key() -> None:
    cs = [Cand("b", 0.5), Cand("a", 0.9), Cand("c", 0.5), Cand("d", 0.1)]
    assert [c.id for c in rank(cs, lambda c: c.score)] == ["a", "b", "c", "d"]


def test_rank_ties_by_id_ascending() -> None:
    cs = [Cand("z", 0.5), Cand("m", 0.5), Cand("a", 0.2), Cand("b", 0.5)]
    assert [c.id for c in rank(cs, lambda c: c.score, tie=lambda c: c.id)] == ["b", "m", "z", "a"]
    assert [c.id for c in rank(list(reversed(cs)), lambda c: c.score, tie=lambda c: c.id)] == ["b", "m", "z", "a"]


def test_rank_puts_nan_last() -> None:
    cs = [Cand("n", math.nan), Cand("a", 0.0), Cand("b", 0.3)]
    assert [c.id for c in rank(cs, lambda c: c.score, tie=lambda c: c.id)] == ["b", "a", "n"]
    assert rank([], lambda c: 0.0) == []
