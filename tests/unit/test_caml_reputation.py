"""CAML reputation: every delta with clamping, consensus, deactivation, PII suspension, consistency bonus."""

from __future__ import annotations

import dataclasses

import hypothesis.strategies as st
import pytest
from hypothesis import given

from governance.caml.reputation import (
    DELTAS,
    SCORE_MAX,
    SCORE_MIN,
    RepReason,
    ReputationConfig,
    apply_delta,
    consistency_bonus_due,
    heavily_refuted,
    pii_rejections_in_window,
    reaches_consensus,
    should_suspend,
)

CFG = ReputationConfig()
H = 3_600_000
DAY = 24 * H
NOW = 1_750_000_000_000

SEED_DELTAS = {
    "OBSERVATION_ACCEPTED": 1,
    "VALIDATED_BY_OTHER": 3,
    "REACHED_CONSENSUS": 10,
    "CONSISTENCY_BONUS": 10,
    "REFUTED": -5,
    "HEAVILY_REFUTED": -15,
    "PII_REJECTION": -10,
    "SUSPENSION": -25,
}


def test_seed_deltas_and_defaults() -> None:
    assert {str(r): d for r, d in DELTAS.items()} == SEED_DELTAS
    assert set(RepReason) == set(DELTAS)
    assert (SCORE_MIN, SCORE_MAX, CFG.initial) == (0.0, 100.0, 0.0)
    assert (CFG.consensus_min_validations, CFG.consensus_ratio) == (3, 0.75)
    assert (CFG.deactivate_min_refutations, CFG.deactivate_ratio) == (5, 0.6)
    assert (CFG.pii_suspend_count, CFG.pii_window_ms, CFG.pii_cache_ms) == (5, DAY, DAY)
    assert (CFG.bonus_min_writes, CFG.bonus_window_ms) == (10, 30 * DAY)


@pytest.mark.parametrize("reason", list(RepReason))
def test_each_delta_mid_range(reason: RepReason) -> None:
    d = SEED_DELTAS[reason.value]
    assert apply_delta(50.0, reason) == (50.0 + d, d)
    assert apply_delta(50.0, reason.value) == (50.0 + d, d)  # type: ignore[arg-type]  # plain strings work


@pytest.mark.parametrize("reason", list(RepReason))
def test_each_delta_clamps_at_the_bounds(reason: RepReason) -> None:
    d = SEED_DELTAS[reason.value]
    if d > 0:
        assert apply_delta(100.0, reason) == (100.0, 0.0)
        assert apply_delta(100.0 - d + 0.5, reason) == (100.0, d - 0.5)
        assert apply_delta(0.0, reason) == (d, d)
    else:
        assert apply_delta(0.0, reason) == (0.0, 0.0)
        assert apply_delta(-d - 0.5, reason) == (0.0, -(-d - 0.5))
        assert apply_delta(100.0, reason) == (100.0 + d, d)


@given(st.floats(0, 100), st.sampled_from(list(RepReason)))
def test_delta_stays_in_range_and_reports_what_changed(score: float, reason: RepReason) -> None:
    new, applied = apply_delta(score, reason)
    assert SCORE_MIN <= new <= SCORE_MAX
    assert new == score + applied
    assert abs(applied) <= abs(DELTAS[reason])


def test_config_validation() -> None:
    for bad in ({"initial": -1.0}, {"initial": 101.0}, {"consensus_ratio": 1.5}, {"pii_window_ms": 0}):
        with pytest.raises(ValueError):
            ReputationConfig(**bad)  # type: ignore[arg-type]
    assert ReputationConfig(initial=50.0).initial == 50.0


@pytest.mark.parametrize(
    ("v", "f", "yes"),
    [(3, 1, True), (3, 2, False), (2, 0, False), (3, 0, True), (6, 2, True), (6, 3, False), (30, 10, True)],
)
def test_consensus(v: int, f: int, yes: bool) -> None:
    assert reaches_consensus(v, f, CFG) is yes


@pytest.mark.parametrize(
    ("v", "f", "yes"),
    [(3, 5, True), (4, 5, False), (0, 4, False), (0, 5, True), (2, 3, False), (4, 6, True), (6, 9, True)],
)
def test_heavily_refuted(v: int, f: int, yes: bool) -> None:
    assert heavily_refuted(v, f, CFG) is yes


def test_ratio_boundaries_are_exact() -> None:
    # 0.6 exactly: f/(v+f) = 6/10, 9/15, 60/100 are all "at" the ratio.
    for v, f in ((4, 6), (6, 9), (40, 60), (400, 600)):
        assert heavily_refuted(v, f, CFG)
        assert not heavily_refuted(v + 1, f, CFG)
    cfg = dataclasses.replace(CFG, consensus_ratio=0.7)
    assert reaches_consensus(7, 3, cfg) and not reaches_consensus(7, 4, cfg)


@given(st.integers(0, 200), st.integers(0, 200))
def test_consensus_and_deactivation_match_the_formula(v: int, f: int) -> None:
    # Rational check, independent of the implementation's integer arithmetic.
    assert reaches_consensus(v, f, CFG) == (v >= 3 and 4 * v >= 3 * (v + f))
    assert heavily_refuted(v, f, CFG) == (f >= 5 and 5 * f >= 3 * (v + f))
    assert not (reaches_consensus(v, f, CFG) and heavily_refuted(v, f, CFG))


def test_pii_suspension_window_is_half_open() -> None:
    five_recent = [NOW - 23 * H, NOW - 10 * H, NOW - H, NOW - 1, NOW]
    assert pii_rejections_in_window(five_recent, NOW, CFG) == 5
    assert should_suspend(five_recent, NOW, CFG)
    first_exactly_24h = [NOW - DAY, *five_recent[1:]]
    assert pii_rejections_in_window(first_exactly_24h, NOW, CFG) == 4
    assert not should_suspend(first_exactly_24h, NOW, CFG)
    just_inside = [NOW - DAY + 1, *five_recent[1:]]
    assert should_suspend(just_inside, NOW, CFG)
    assert not should_suspend(five_recent[:4], NOW, CFG)
    assert not should_suspend([*five_recent[:4], NOW + 1], NOW, CFG)  # the future is not counted yet
    assert not should_suspend([], NOW, CFG)


def _writes(n: int, newest: int = NOW) -> list[int]:
    return [newest - i * H for i in range(n)]


def test_consistency_bonus_boundaries() -> None:
    w = 30 * DAY
    assert consistency_bonus_due(_writes(10), [], None, NOW, CFG)
    assert not consistency_bonus_due(_writes(9), [], None, NOW, CFG)
    # The oldest of ten writes exactly 30 days old has left the window.
    ten_last_at_edge = [*_writes(9), NOW - w]
    assert not consistency_bonus_due(ten_last_at_edge, [], None, NOW, CFG)
    assert consistency_bonus_due([*_writes(9), NOW - w + 1], [], None, NOW, CFG)
    # Any PII rejection in the window blocks it; one exactly 30 days old does not.
    assert not consistency_bonus_due(_writes(10), [NOW - w + 1], None, NOW, CFG)
    assert not consistency_bonus_due(_writes(10), [NOW], None, NOW, CFG)
    assert consistency_bonus_due(_writes(10), [NOW - w], None, NOW, CFG)
    # At most one bonus per 30 days.
    assert not consistency_bonus_due(_writes(10), [], NOW - w + 1, NOW, CFG)
    assert not consistency_bonus_due(_writes(10), [], NOW, NOW, CFG)
    assert consistency_bonus_due(_writes(10), [], NOW - w, NOW, CFG)


def test_consistency_bonus_respects_config() -> None:
    cfg = dataclasses.replace(CFG, bonus_min_writes=2, bonus_window_ms=DAY)
    assert consistency_bonus_due([NOW - 1, NOW], [], None, NOW, cfg)
    assert not consistency_bonus_due([NOW - DAY, NOW], [], None, NOW, cfg)
