"""CAML per-tenant rate limits: tiers, the sliding hour, limit-1/limit, retry_after."""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis import given

from governance.caml.rate_limit import REFUSAL_CODE, TIERS, WINDOW_MS, RateDecision, decide, in_window, tier_limit

NOW = 1_750_000_000_000


def test_tiers() -> None:
    assert TIERS == {"free": 20, "pro": 1_000, "enterprise": 100_000}
    assert WINDOW_MS == 3_600_000
    assert REFUSAL_CODE == "RATE_LIMITED"
    assert [tier_limit(t) for t in ("free", "pro", "enterprise")] == [20, 1_000, 100_000]
    for bad in ("Free", "gold", ""):
        with pytest.raises(ValueError):
            tier_limit(bad)


@pytest.mark.parametrize("limit", [1, 20, 1_000])
def test_limit_minus_one_then_limit(limit: int) -> None:
    # attempts spread over the last 50 minutes, oldest first
    attempts = [NOW - 3_000_000 + i * (3_000_000 // limit) for i in range(limit)]
    assert decide(attempts[:-1], NOW, limit) == RateDecision(True, 0, limit - 1, limit)
    d = decide(attempts, NOW, limit)
    assert (d.allowed, d.used, d.limit) == (False, limit, limit)
    assert d.retry_after_ms == attempts[0] + WINDOW_MS - NOW
    # once the oldest has left, exactly one more fits
    later = NOW + d.retry_after_ms
    assert decide(attempts, later - 1, limit).allowed is False
    assert decide(attempts, later, limit) == RateDecision(True, 0, limit - 1, limit)


def test_window_is_half_open() -> None:
    exactly_an_hour_old = [NOW - WINDOW_MS, NOW - 10, NOW]
    assert in_window(exactly_an_hour_old, NOW) == [NOW - 10, NOW]
    assert decide(exactly_an_hour_old, NOW, 3).allowed
    assert not decide([NOW - WINDOW_MS + 1, NOW - 10, NOW], NOW, 3).allowed
    assert decide([NOW + 5], NOW, 1).allowed  # logged after now: not counted yet


def test_retry_after_is_at_least_one_ms() -> None:
    d = decide([NOW - WINDOW_MS + 1], NOW, 1)
    assert d == RateDecision(False, 1, 1, 1)
    assert decide([NOW], NOW, 1).retry_after_ms == WINDOW_MS


def test_order_of_attempts_does_not_matter() -> None:
    attempts = [NOW - 5, NOW - 3_000_000, NOW - 100]
    assert decide(attempts, NOW, 3).retry_after_ms == NOW - 3_000_000 + WINDOW_MS - NOW


def test_lowered_limit_waits_for_enough_to_leave() -> None:
    attempts = [NOW - 3_000_000, NOW - 2_000_000, NOW - 1_000_000, NOW]
    d = decide(attempts, NOW, 2)
    assert (d.allowed, d.used) == (False, 4)
    assert d.retry_after_ms == (NOW - 1_000_000) + WINDOW_MS - NOW  # three must leave
    assert decide(attempts, NOW + d.retry_after_ms, 2).allowed


def test_limit_zero_and_negative() -> None:
    assert decide([], NOW, 0) == RateDecision(False, WINDOW_MS, 0, 0)
    with pytest.raises(ValueError):
        decide([], NOW, -1)


@given(st.lists(st.integers(NOW - 2 * WINDOW_MS, NOW), max_size=40), st.integers(1, 30))
def test_retry_after_is_exactly_when_one_more_fits(attempts: list[int], limit: int) -> None:
    d = decide(attempts, NOW, limit)
    assert d.used == sum(1 for t in attempts if NOW - WINDOW_MS < t <= NOW)
    assert d.allowed == (d.used < limit)
    if not d.allowed:
        assert 1 <= d.retry_after_ms <= WINDOW_MS
        assert decide(attempts, NOW + d.retry_after_ms, limit).allowed
        assert not decide(attempts, NOW + d.retry_after_ms - 1, limit).allowed
    else:
        assert d.retry_after_ms == 0
