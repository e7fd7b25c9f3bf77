"""Quorum over active, healthy claws (seed 004, "Why 3+ Claws for Voting").

A claw is in the quorum basis at instant ``t`` if its latest presence heartbeat says ACTIVE
and healthy and lies within ``window_ms`` of ``t``. The window is symmetric: heartbeats and
votes travel on different partitions, so a heartbeat logged just after a vote may be read
before it. Only votes of claws in the basis count; the majority is floor(n/2)+1 and needs
at least ``MIN_PARTICIPANTS`` claws in the basis.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

MIN_PARTICIPANTS = 3
DEFAULT_PRESENCE_WINDOW_MS = 30_000

Outcome = Literal["APPROVED", "REJECTED"]


@dataclass(frozen=True)
class Heartbeat:
    last_seen: int  # log time of the claw's latest presence, ms
    ok: bool  # that presence said ACTIVE and healthy


@dataclass(frozen=True)
class Tally:
    basis: int  # active healthy claws when counted
    threshold: int  # votes needed for a majority of the basis
    yes: int
    no: int
    voters: tuple[str, ...]  # claws whose votes were counted, sorted
    outcome: Outcome | None  # None: no majority (yet), or basis below the minimum


def majority(n: int) -> int:
    """3 claws -> 2, 4 -> 3, 5 -> 3."""
    return n // 2 + 1


def active_claws(presence: Mapping[str, Heartbeat], at: int, window_ms: int) -> frozenset[str]:
    return frozenset(c for c, h in presence.items() if h.ok and abs(at - h.last_seen) <= window_ms)


def tally(
    ballots: Iterable[tuple[str, bool]], active: frozenset[str], min_participants: int = MIN_PARTICIPANTS
) -> Tally:
    """Count ``(claw, yes?)`` ballots of claws in ``active``; decide if a majority exists."""
    counted = {claw: yes for claw, yes in ballots if claw in active}
    yes = sum(1 for v in counted.values() if v)
    no = len(counted) - yes
    n = len(active)
    threshold = majority(max(n, min_participants))
    outcome: Outcome | None = None
    if n >= min_participants:
        if yes >= threshold:
            outcome = "APPROVED"
        elif no >= threshold:
            outcome = "REJECTED"
    return Tally(n, threshold, yes, no, tuple(sorted(counted)), outcome)
