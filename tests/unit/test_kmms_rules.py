"""KMMS small rules: strength decay and reinforcement, L1 Jaccard, contradiction resolution, rank fusion."""

from __future__ import annotations

import math

import hypothesis.strategies as st
import pytest
from hypothesis import given

from governance.kmms.abstraction import jaccard, l1_action, words
from governance.kmms.contradiction import resolve
from governance.kmms.fusion import aggregate_max, rrf
from governance.kmms.strength import (
    FORGET_BELOW,
    HALF_LIFE_MS,
    WEAK_BELOW,
    is_forgotten,
    is_weak,
    reinforce,
    strength_at,
)
from governance.kmms.values import ContradictionClass, Resolution

DAY = 86_400_000
T0 = 1_776_254_400_000

# --- strength ---------------------------------------------------------------------------------------


def test_strength_defaults() -> None:
    assert HALF_LIFE_MS == 30 * DAY
    assert (WEAK_BELOW, FORGET_BELOW) == (0.3, 0.05)


@pytest.mark.parametrize(
    ("elapsed", "expected"),
    [(0, 0.8), (30 * DAY, 0.4), (60 * DAY, 0.2), (90 * DAY, 0.1), (15 * DAY, 0.8 / math.sqrt(2))],
)
def test_decay_halves_every_half_life(elapsed: int, expected: float) -> None:
    assert strength_at(0.8, T0, T0 + elapsed) == pytest.approx(expected, rel=1e-12)


def test_no_decay_backwards_and_custom_half_life() -> None:
    assert strength_at(0.8, T0, T0 - DAY) == 0.8
    assert strength_at(0.8, T0, T0 + 7 * DAY, half_life_ms=7 * DAY) == pytest.approx(0.4)
    with pytest.raises(ValueError):
        strength_at(0.8, T0, T0 + DAY, half_life_ms=0)


def test_reinforce_capped() -> None:
    assert reinforce(0.5) == pytest.approx(0.6)
    assert reinforce(0.95) == 1.0
    assert reinforce(1.0) == 1.0
    assert reinforce(0.2, 0.3) == pytest.approx(0.5)


def test_weak_and_forgotten_thresholds_are_strict() -> None:
    assert (is_weak(0.3), is_weak(0.2999)) == (False, True)
    assert (is_forgotten(0.05), is_forgotten(0.0499)) == (False, True)
    assert is_forgotten(0.1, floor=0.2)
    # a fresh node (strength 0.5) drops out of default retrieval after ~100 days without use
    assert not is_forgotten(strength_at(0.5, T0, T0 + 99 * DAY))
    assert is_forgotten(strength_at(0.5, T0, T0 + 100 * DAY))


@given(s=st.floats(0.0, 1.0), a=st.integers(0, 10**12), b=st.integers(0, 10**12))
def test_decay_monotone_and_bounded(s: float, a: int, b: int) -> None:
    lo, hi = sorted((a, b))
    assert 0.0 <= strength_at(s, 0, hi) <= strength_at(s, 0, lo) <= s


# --- abstraction (Jaccard) --------------------------------------------------------------------------


def test_words_and_jaccard() -> None:
    assert words("Hello, World! hello 42x") == frozenset({"hello", "world", "42x"})
    assert words("Café") == frozenset({"caf"})  # accents split words
    assert jaccard("a b c", "b c d") == 0.5
    assert jaccard("", "") == 1.0
    assert jaccard("", "a") == 0.0
    assert jaccard("The cat", "the CAT.") == 1.0


def _w(n: int) -> str:
    return " ".join(f"w{i}" for i in range(1, n + 1))


@pytest.mark.parametrize(
    ("current", "new", "ratio", "action"),
    [
        (_w(10), _w(7), 0.7, "VERIFY"),  # exactly at the threshold
        (_w(17), _w(12), 12 / 17, "VERIFY"),  # 0.7059, just above
        (_w(23), _w(16), 16 / 23, "NEW_VERSION"),  # 0.6957, just below
        (_w(10), _w(7) + " x1", 7 / 11, "NEW_VERSION"),
    ],
)
def test_l1_action_at_threshold(current: str, new: str, ratio: float, action: str) -> None:
    assert jaccard(current, new) == ratio
    assert l1_action(current, new) == action


def test_l1_action_other_cases() -> None:
    assert l1_action(None, "anything") == "NEW_VERSION"
    assert l1_action("John prefers DuckDB", "john PREFERS duckdb!") == "VERIFY"
    assert l1_action("John prefers DuckDB", "John prefers Postgres") == "NEW_VERSION"  # 2/4
    assert l1_action("a b c", "b c d", threshold=0.5) == "VERIFY"


# --- contradiction ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "updates", "expected"),
    [
        ("temporal", False, "supersede"),
        ("temporal", True, "supersede"),
        ("contextual", False, "coexist"),
        ("contextual", True, "coexist"),
        ("direct", False, "flag_for_review"),
        ("direct", True, "supersede"),
    ],
)
def test_resolve(cls: ContradictionClass, updates: bool, expected: Resolution) -> None:
    assert resolve(cls, updates) == expected


def test_resolve_unknown_class() -> None:
    with pytest.raises(ValueError):
        resolve("sideways", False)  # type: ignore[arg-type]


# --- fusion -----------------------------------------------------------------------------------------


def test_rrf_exact_scores_and_order() -> None:
    fused = rrf([["a", "b", "c"], ["b", "d"]])
    assert [d for d, _ in fused] == ["b", "a", "d", "c"]
    scores = dict(fused)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["d"] == pytest.approx(1 / 62)
    assert scores["c"] == pytest.approx(1 / 63)


def test_rrf_ties_by_id_and_duplicates_count_once() -> None:
    assert rrf([["b", "a"], ["a", "b"]]) == [("a", 1 / 61 + 1 / 62), ("b", 1 / 61 + 1 / 62)]
    assert rrf([["x", "y", "x"]]) == [("x", 1 / 61), ("y", 1 / 62)]
    assert rrf([]) == []
    assert rrf([[], []]) == []


def test_rrf_k_and_weights() -> None:
    assert rrf([["a"], ["b"]], k=0, weights=[1.0, 3.0]) == [("b", 3.0), ("a", 1.0)]
    assert rrf([["a", "b"]], k=10) == [("a", 1 / 11), ("b", 1 / 12)]
    with pytest.raises(ValueError):
        rrf([["a"]], weights=[1.0, 2.0])
    with pytest.raises(ValueError):
        rrf([["a"]], k=-1)


_ids = st.lists(st.sampled_from("abcdefgh"), max_size=8)


@given(rankings=st.lists(_ids, max_size=4))
def test_rrf_invariants(rankings: list[list[str]]) -> None:
    fused = rrf(rankings)
    assert len({d for d, _ in fused}) == len(fused) == len({d for r in rankings for d in r})
    assert fused == sorted(fused, key=lambda t: (-t[1], t[0]))
    assert rrf(list(reversed(rankings))) == fused  # the order of the rankings does not matter
    # a document first in every ranking it appears in, and present in all, is never beaten
    if rankings and all(r for r in rankings) and len({r[0] for r in rankings}) == 1:
        assert fused[0][0] == rankings[0][0]


def test_aggregate_max() -> None:
    hits = [("u1", "s1", 0.4), ("u2", "s1", 0.9), ("u3", "s2", 0.9), ("u4", "s3", 0.5), ("u5", "s3", math.nan)]
    assert aggregate_max(hits) == [("s1", 0.9), ("s2", 0.9), ("s3", 0.5)]
    assert aggregate_max([]) == []
    assert aggregate_max(iter([("u", "p", -1.0)])) == [("p", -1.0)]


def test_facts_read_in_a_questions_words() -> None:
    from governance.kmms.phrasing import embedding_text, fact_sentence, fact_terms

    assert fact_sentence("user", "residence", "Porto") == "where I live: Porto"
    assert fact_sentence("John", "opinion_duckdb_migration", "risky") == "John opinion duckdb migration: risky"
    assert "company I work for" in fact_terms("user", "employer", "Globex")
    assert embedding_text("user: I moved.\nassistant: Noted.") == "I moved."
    assert embedding_text("assistant: Welcome back.\ntool: 3 results") == "Welcome back.\n3 results"
