"""Quorum over active, healthy claws (seed 004, "Why 3+ Claws for Voting").

A claw is in the quorum basis at instant ``t`` if its latest heartbeat logged at or before ``t``
says ACTIVE and healthy and lies within ``window_ms`` of ``t``; a claw just starting, with no
heartbeat before ``t``, counts by its first heartbeat if that lies within the window after ``t``
(a claw may vote as it starts, and heartbeats and votes travel on different partitions). A claw
that fell silent does not count for a vote by coming back after it.
Only votes of claws in the basis count; the majority is floor(n/2)+1 and needs at least
``MIN_PARTICIPANTS`` claws in the basis.

The status is asked *at the vote's log time*, which may lie well behind the newest heartbeat read
(after an outage, presence is read ahead of votes stuck on another broker). So each claw keeps its
heartbeats as a short history (``Presence``), not just the latest: a vote read late is judged by the
heartbeats around it, exactly as an in-order read would have judged it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

MIN_PARTICIPANTS = 3
DEFAULT_PRESENCE_WINDOW_MS = 30_000
DEFAULT_PRESENCE_HISTORY_MS = 3_600_000  # how far behind the newest heartbeat a vote may still be judged

Outcome = Literal["APPROVED", "REJECTED"]


@dataclass(frozen=True)
class Heartbeat:
    last_seen: int  # log time of the claw's latest presence, ms
    ok: bool  # that presence said ACTIVE and healthy


@dataclass(frozen=True)
class Run:
    """Heartbeats of one claw with the same status, each within the window of the one before."""

    first: int
    last: int
    ok: bool


@dataclass(frozen=True)
class Presence:
    """One claw's heartbeat history, as runs, oldest first (a claw beating steadily has one run)."""

    runs: tuple[Run, ...]

    @classmethod
    def of(cls, hb: Heartbeat) -> Presence:
        return cls((Run(hb.last_seen, hb.last_seen, hb.ok),))

    @property
    def latest(self) -> Heartbeat:
        last = self.runs[-1]
        return Heartbeat(last.last, last.ok)

    def beat(self, hb: Heartbeat, window_ms: int, keep_ms: int) -> Presence | None:
        """The history with ``hb`` added; None if ``hb`` is older than the latest heartbeat (ignored).
        Runs that ended more than ``keep_ms`` before ``hb`` are dropped."""
        last = self.runs[-1]
        if hb.last_seen < last.last:
            return None
        if hb.ok == last.ok and hb.last_seen - last.last <= window_ms:
            runs = (*self.runs[:-1], Run(last.first, hb.last_seen, hb.ok))
        else:
            runs = (*self.runs, Run(hb.last_seen, hb.last_seen, hb.ok))
        return Presence(tuple(r for r in runs[:-1] if r.last >= hb.last_seen - keep_ms) + runs[-1:])

    def ok_at(self, at: int, window_ms: int) -> bool:
        before = after = None
        for r in self.runs:
            if r.first <= at:
                before = r
            elif after is None:
                after = r
        if before is not None:  # inside the run, or just after it
            return at - before.last <= window_ms and before.ok
        # A claw just starting (no heartbeat before ``at``): its first heartbeat, if within the window.
        return after is not None and after.first - at <= window_ms and after.ok


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


def active_claws(presence: Mapping[str, Presence], at: int, window_ms: int) -> frozenset[str]:
    return frozenset(c for c, h in presence.items() if h.ok_at(at, window_ms))


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
