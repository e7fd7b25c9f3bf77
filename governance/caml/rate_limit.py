"""Per-operator (tenant) write rate limits: a sliding one-hour window over attempt log times.

Decisions (beyond the seed):

* The window is half-open, ``(now - 1 h, now]``, as the reputation windows are: an attempt exactly
  one hour old no longer counts; attempts logged after ``now`` are not counted yet.
* ``retry_after_ms`` is the time until enough counted attempts leave the window for one more to
  fit. With ``used == limit`` (the normal case) that is when the oldest counted attempt leaves,
  ``oldest + 1 h - now``; if the limit was lowered below ``used`` it is the
  ``(used - limit + 1)``-th oldest. A limit of 0 refuses everything with ``retry_after_ms = 1 h``.
* The caller decides what "counted" means (normally: attempts that were allowed) and passes only
  those; ``in_window`` trims a history to what can still matter.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

WINDOW_MS = 3_600_000
TIERS: dict[str, int] = {"free": 20, "pro": 1_000, "enterprise": 100_000}  # writes per hour
REFUSAL_CODE = "RATE_LIMITED"


@dataclass(frozen=True)
class RateDecision:
    allowed: bool
    retry_after_ms: int  # 0 when allowed
    used: int  # counted attempts in the window before this one
    limit: int


def tier_limit(tier: str) -> int:
    try:
        return TIERS[tier]
    except (KeyError, TypeError):
        raise ValueError(f"unknown tier {str(tier)[:64]!r}; known: {', '.join(TIERS)}") from None


def in_window(attempts_ms: Sequence[int], now_ms: int) -> list[int]:
    """The attempts in (now - 1 h, now], in their given order."""
    lo = now_ms - WINDOW_MS
    return [t for t in attempts_ms if lo < t <= now_ms]


def decide(attempts_ms: Sequence[int], now_ms: int, limit: int) -> RateDecision:
    """May one more attempt be counted at ``now_ms``, given the previously counted ``attempts_ms``?"""
    if limit < 0:
        raise ValueError("limit must be >= 0")
    counted = in_window(attempts_ms, now_ms)
    used = len(counted)
    if used < limit:
        return RateDecision(True, 0, used, limit)
    if limit == 0:
        return RateDecision(False, WINDOW_MS, used, limit)
    # The (used - limit + 1) oldest must leave; the last of them leaves at its time + 1 h.
    must_leave = heapq.nsmallest(used - limit + 1, counted)[-1]
    return RateDecision(False, must_leave + WINDOW_MS - now_ms, used, limit)
