"""Author reputation per deployment: the deltas, clamping, and the background rules (seed paper).

Decisions (beyond the seed):

* Scores live in [SCORE_MIN, SCORE_MAX]; ``apply_delta`` clamps the result and reports the delta
  actually applied, so the event log can carry exactly what changed (0 at a bound).
* Ratios are compared exactly: a configured ratio is read as the decimal it is written as
  (``Fraction(str(0.75)) == 3/4``) and compared by cross-multiplying integers, so 3/(3+1) >= 0.75
  holds with no float rounding either way.
* Every rolling window is half-open, ``(now - window, now]``: an event exactly one window old has
  left it, and events later than ``now`` are not counted yet.
* Consistency bonus: at most one per ``bonus_window_ms``; the next is due once the last bonus is
  exactly ``bonus_window_ms`` old (the same half-open window).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction

SCORE_MIN, SCORE_MAX = 0.0, 100.0
DAY_MS = 86_400_000


class RepReason(StrEnum):
    OBSERVATION_ACCEPTED = "OBSERVATION_ACCEPTED"
    VALIDATED_BY_OTHER = "VALIDATED_BY_OTHER"
    REACHED_CONSENSUS = "REACHED_CONSENSUS"
    CONSISTENCY_BONUS = "CONSISTENCY_BONUS"
    REFUTED = "REFUTED"
    HEAVILY_REFUTED = "HEAVILY_REFUTED"
    PII_REJECTION = "PII_REJECTION"
    SUSPENSION = "SUSPENSION"


DELTAS: dict[RepReason, int] = {
    RepReason.OBSERVATION_ACCEPTED: 1,
    RepReason.VALIDATED_BY_OTHER: 3,
    RepReason.REACHED_CONSENSUS: 10,
    RepReason.CONSISTENCY_BONUS: 10,
    RepReason.REFUTED: -5,
    RepReason.HEAVILY_REFUTED: -15,
    RepReason.PII_REJECTION: -10,
    RepReason.SUSPENSION: -25,
}


@dataclass(frozen=True)
class ReputationConfig:
    initial: float = 0.0
    consensus_min_validations: int = 3
    consensus_ratio: float = 0.75  # v/(v+f) at least this
    deactivate_min_refutations: int = 5
    deactivate_ratio: float = 0.6  # f/(v+f) at least this
    pii_suspend_count: int = 5  # this many PII rejections in the window -> suspension
    pii_window_ms: int = DAY_MS
    pii_cache_ms: int = DAY_MS  # how long the engine remembers a PII-rejected content digest
    bonus_min_writes: int = 10
    bonus_window_ms: int = 30 * DAY_MS

    def __post_init__(self) -> None:
        if not SCORE_MIN <= self.initial <= SCORE_MAX:
            raise ValueError(f"initial reputation must be in [{SCORE_MIN:g}, {SCORE_MAX:g}]")
        for name in ("consensus_ratio", "deactivate_ratio"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1]")
        for name in ("pii_window_ms", "pii_cache_ms", "bonus_window_ms"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")


def clamp(score: float) -> float:
    return min(SCORE_MAX, max(SCORE_MIN, score))


def apply_delta(score: float, reason: RepReason) -> tuple[float, float]:
    """(new score, delta actually applied after clamping to [0, 100])."""
    d = float(DELTAS[RepReason(reason)])
    raw = score + d
    if SCORE_MIN <= raw <= SCORE_MAX:
        return raw, d  # report the delta itself, not a float-rounded new - score
    new = clamp(raw)
    return new, new - score


def _at_least(part: int, whole: int, ratio: float) -> bool:
    """part/whole >= ratio, exactly (see the module note on ratios)."""
    r = Fraction(str(ratio))
    return whole > 0 and part * r.denominator >= r.numerator * whole


def reaches_consensus(v: int, f: int, cfg: ReputationConfig) -> bool:
    """Promotion to consensus: v >= 3 and v/(v+f) >= 0.75 (defaults)."""
    return v >= cfg.consensus_min_validations and _at_least(v, v + f, cfg.consensus_ratio)


def heavily_refuted(v: int, f: int, cfg: ReputationConfig) -> bool:
    """Auto-deactivation: f >= 5 and f/(v+f) >= 0.6 (defaults)."""
    return f >= cfg.deactivate_min_refutations and _at_least(f, v + f, cfg.deactivate_ratio)


def count_in_window(times_ms: Iterable[int], now_ms: int, window_ms: int) -> int:
    """Events in (now - window, now]."""
    lo = now_ms - window_ms
    return sum(1 for t in times_ms if lo < t <= now_ms)


def pii_rejections_in_window(times_ms: Sequence[int], now_ms: int, cfg: ReputationConfig) -> int:
    return count_in_window(times_ms, now_ms, cfg.pii_window_ms)


def should_suspend(times_ms: Sequence[int], now_ms: int, cfg: ReputationConfig) -> bool:
    """At least ``pii_suspend_count`` PII rejections in (now - 24 h, now]."""
    return pii_rejections_in_window(times_ms, now_ms, cfg) >= cfg.pii_suspend_count


def consistency_bonus_due(
    accepted_ms: Sequence[int], pii_ms: Sequence[int], last_bonus_ms: int | None, now_ms: int, cfg: ReputationConfig
) -> bool:
    """>= 10 accepted writes and no PII rejection in (now - 30 d, now], and no bonus in that window."""
    w = cfg.bonus_window_ms
    if last_bonus_ms is not None and now_ms - last_bonus_ms < w:
        return False
    return count_in_window(accepted_ms, now_ms, w) >= cfg.bonus_min_writes and count_in_window(pii_ms, now_ms, w) == 0
