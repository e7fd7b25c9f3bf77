"""Node strength: exponential decay with a half-life, reinforcement on use, and the forgetting floor.

Decisions (beyond the seed):

* Decay is continuous: ``s(t) = s0 · 0.5^((t - since) / half_life)``, default half-life 30 days. A time
  at or before ``since`` (a skewed clock, a replay) leaves the strength as it was: no decay, never growth.
* Reinforcement is additive and capped: ``min(1.0, s + 0.1)``.
* Two thresholds, deliberately far apart: below ``WEAK_BELOW`` (0.3) a node still answers but its
  confidence takes the -0.10 "weak node" modifier; below ``FORGET_BELOW`` (0.05, about 2.6 half-lives
  from 0.3) it drops out of default retrieval. Nothing is deleted: an explicit or verbatim query can
  still reach it (L4 is the record).
"""

from __future__ import annotations

import math

DAY_MS = 86_400_000
HALF_LIFE_MS = 30 * DAY_MS
REINFORCE_BY = 0.1
WEAK_BELOW = 0.3
FORGET_BELOW = 0.05


def strength_at(strength: float, since_ms: int, at_ms: int, half_life_ms: int = HALF_LIFE_MS) -> float:
    """The strength at ``at_ms`` of a node whose strength was ``strength`` at ``since_ms``."""
    if half_life_ms <= 0:
        raise ValueError(f"half_life_ms must be > 0, got {half_life_ms}")
    if at_ms <= since_ms:
        return strength
    return strength * math.pow(0.5, (at_ms - since_ms) / half_life_ms)


def reinforce(strength: float, increment: float = REINFORCE_BY) -> float:
    """The strength after a use (retrieval, verification): capped at 1.0."""
    return min(1.0, strength + increment)


def is_weak(strength: float, below: float = WEAK_BELOW) -> bool:
    """Strictly below ``below`` (0.3): the confidence modifier for a weak node applies."""
    return strength < below


def is_forgotten(strength: float, floor: float = FORGET_BELOW) -> bool:
    """Strictly below ``floor`` (0.05): the node drops out of default retrieval."""
    return strength < floor
