"""How the benches print what they measured: a percentile, a latency distribution (p50 / p95 / p99 / mean) and the
machine's load average beside each phase (the machine is shared)."""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence


def percentile(values: Sequence[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(p * len(s)))] if s else float("nan")


def dist(values: Sequence[float], unit: str = "ms", digits: int = 1) -> str:
    if not values:
        return "(no samples)"
    return (f"p50 {percentile(values, 0.5):.{digits}f} {unit}  p95 {percentile(values, 0.95):.{digits}f} {unit}  "
            f"p99 {percentile(values, 0.99):.{digits}f} {unit}  mean {statistics.fmean(values):.{digits}f} {unit}  "
            f"(n={len(values)})")  # fmt: skip


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())
