"""Sync conflict resolution (seed 003 §6.3–§6.4), a pure function.

A record changed on both sides since the last sync (same kind and id, different content) is a
conflict, settled per kind: traces ``local_wins``, facts ``remote_wins``, control tokens
``remote_wins`` (the seed's defaults); perceptions and skills, which the seed leaves open,
``local_wins`` (the local memory is the primary). Whatever wins, a revoked token stays revoked
(apply.py keeps the revocation when a token is overwritten). Governed shared facts are never part
of a sync: KSTAR facts live in the claw's memory, and the governance processor's versioned facts
change only by a quorum decision (X-35).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

Policy = Literal["local_wins", "remote_wins"]
DEFAULT_POLICY: Mapping[str, Policy] = {"trace": "local_wins", "fact": "remote_wins", "control_token": "remote_wins",
                                        "perception": "local_wins", "skill": "local_wins"}  # fmt: skip


@dataclass(frozen=True)
class Change:
    kind: str
    record_id: str
    content_hash: str


@dataclass
class Plan:
    pull: list[Change] = field(default_factory=list)  # remote records to apply here
    push: list[Change] = field(default_factory=list)  # local records to send there
    conflicts: list[tuple[Change, Change, Policy]] = field(default_factory=list)  # (local, remote, who won)


def resolve(local: Sequence[Change], remote: Sequence[Change], policy: Mapping[str, Policy] = DEFAULT_POLICY) -> Plan:
    """Steps 4 of the protocol: which side's change goes where. Identical content on both sides
    is no change at all."""
    mine = {(c.kind, c.record_id): c for c in local}
    theirs = {(c.kind, c.record_id): c for c in remote}
    plan = Plan()
    for key, r in theirs.items():
        here = mine.get(key)
        if here is None:
            plan.pull.append(r)
        elif here.content_hash != r.content_hash:
            wins = policy.get(r.kind, "local_wins")
            plan.conflicts.append((here, r, wins))
            (plan.pull if wins == "remote_wins" else plan.push).append(r if wins == "remote_wins" else here)
    plan.push += [c for key, c in mine.items() if key not in theirs]
    return plan
