"""The recall composite score (seed paper, eq. 1) and a deterministic ranking.

    s = 0.45·sim + 0.25·log(1+r)/log(101) + 0.20·v/(v+f+1) + 0.10·e^(−d/60)

Decisions (beyond the seed):

* Inputs are clamped so every term stays in its [0, weight] range: sim (cosine) to [0, 1] — a
  negative similarity means "unrelated", not "worse than unrelated", and NaN counts as 0; r to
  [0, 100]; v and f to >= 0; d to >= 0 (an observation logged after ``now`` by a skewed partition
  counts as brand new, not as fresher than new). Hence 0 <= s <= 1.
* ``rank`` orders by score descending; equal scores (and NaN, treated as lowest) are ordered by
  ``tie`` ascending when given — pass the observation id so the same inputs always rank the same
  across replicas — else by input order (the sort is stable).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

W_SIM, W_REP, W_VAL, W_AGE = 0.45, 0.25, 0.20, 0.10
REP_MAX = 100.0
RECENCY_DAYS = 60.0
DAY_MS = 86_400_000
_LOG_REP_MAX = math.log1p(REP_MAX)  # log(101)

T = TypeVar("T")


@dataclass(frozen=True)
class ScoreParts:
    """Each term already weighted; ``total`` is their sum."""

    sim: float
    reputation: float
    validation: float
    recency: float
    total: float


def _unit(x: float) -> float:
    return 0.0 if math.isnan(x) else min(1.0, max(0.0, x))


def score_parts(sim: float, reputation: float, validations: int, refutations: int, age_days: float) -> ScoreParts:
    r = min(REP_MAX, max(0.0, reputation)) if not math.isnan(reputation) else 0.0
    v, f = max(0, validations), max(0, refutations)
    d = max(0.0, age_days) if not math.isnan(age_days) else math.inf  # unknown age: no recency credit
    parts = (
        W_SIM * _unit(sim),
        W_REP * math.log1p(r) / _LOG_REP_MAX,
        W_VAL * v / (v + f + 1),
        W_AGE * math.exp(-d / RECENCY_DAYS),
    )
    return ScoreParts(*parts, total=math.fsum(parts))


def composite(sim: float, reputation: float, validations: int, refutations: int, age_days: float) -> float:
    return score_parts(sim, reputation, validations, refutations, age_days).total


def age_days(created_ms: int, now_ms: int) -> float:
    """Age as fractional days between two log times (negative if created after now; clamped later)."""
    return (now_ms - created_ms) / DAY_MS


def rank(cands: Sequence[T], key: Callable[[T], float], tie: Callable[[T], str] | None = None) -> list[T]:
    """``cands`` by ``key`` descending; ties by ``tie`` ascending if given, else input order."""

    def score(c: T) -> float:
        s = key(c)
        return -math.inf if math.isnan(s) else s

    if tie is None:
        return sorted(cands, key=lambda c: -score(c))
    tie_key = tie
    return sorted(cands, key=lambda c: (-score(c), tie_key(c)))
