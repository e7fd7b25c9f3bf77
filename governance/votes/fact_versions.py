"""Fact version integrity (seed 004, control 4): v1 first, then exactly previous + 1.

Used twice: by the governance processor before it publishes a fact, and by the facts read
model for every fact it folds, so a fact written around the processor still cannot rewrite
history.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VersionRefusal:
    code: str  # FACT_STALE | FACT_CONFLICT | FACT_DUPLICATE_VERSION
    detail: str


def check_update(current: int, base: int) -> VersionRefusal | None:
    """May an update based on version ``base`` apply when the key is at ``current`` (0: none)?"""
    if base < current:
        return VersionRefusal("FACT_STALE", f"based on v{base} but the fact is at v{current}")
    if base > current:
        what = f"v{current}" if current else "no version yet"
        return VersionRefusal("FACT_CONFLICT", f"based on v{base} but the fact has {what}: would leave a gap")
    return None


def check_version(current: int, version: int) -> VersionRefusal | None:
    """May version ``version`` follow ``current``? Duplicates, regressions and gaps may not."""
    if version == current and current > 0:
        return VersionRefusal("FACT_DUPLICATE_VERSION", f"v{version} already exists")
    if version <= current:
        return VersionRefusal("FACT_STALE", f"v{version} is not after the current v{current}")
    if version != current + 1:
        return VersionRefusal("FACT_CONFLICT", f"v{version} skips from v{current}; the next is v{current + 1}")
    return None
