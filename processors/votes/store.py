"""The governance processor's durable state: proposals with their ballots, presence, fact versions.

Modelled on eventsourcing's recorders: one interface, an in-memory backend (the driver and
pure tests) and a Postgres backend (schema ``govproc``, migration 7), one contract suite run
against both (tests/unit/test_governance_store_contract.py). The Postgres store writes on
the runtime's connection, so a batch's state, outputs and input offsets commit together.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Protocol

import psycopg

from governance.votes.quorum import Heartbeat, Presence, Run
from governance.votes.voting import GovernanceState, ProposalState, VotingConfig

# Which tenants an instance of a split governance processor owns (None: all of them).
Owns = Callable[[str], bool] | None


class GovernanceStore(Protocol):
    def load(self, cfg: VotingConfig, owns: Owns = None) -> GovernanceState:
        """The state as last saved (nothing dirty), of the tenants ``owns`` accepts."""
        ...

    def save(self, gs: GovernanceState) -> None:
        """Write what ``gs`` marks dirty, then clear the marks."""
        ...


def presence_to_json(history: Presence) -> str:
    return json.dumps([[r.first, r.last, r.ok] for r in history.runs], separators=(",", ":"))


def presence_from_json(raw: str) -> Presence:
    return Presence(tuple(Run(int(first), int(last), bool(ok)) for first, last, ok in json.loads(raw)))


def _presence_row(tenant: str, claw: str, history: Presence) -> tuple[str, str, int, bool, str]:
    latest = history.latest  # last_seen and ok stay the latest heartbeat, for readers of the table
    return tenant, claw, latest.last_seen, latest.ok, presence_to_json(history)


class InMemoryGovernanceStore:
    def __init__(self) -> None:
        self._proposals: dict[tuple[str, str], str] = {}  # JSON, so nothing is shared with a live state
        self._presence: dict[tuple[str, str], Presence] = {}
        self._facts: dict[tuple[str, str], int] = {}

    def load(self, cfg: VotingConfig, owns: Owns = None) -> GovernanceState:
        gs = GovernanceState(cfg)
        mine = owns or (lambda _tenant: True)
        for (tenant, _), raw in self._proposals.items():
            if mine(tenant):
                gs.restore_proposal(ProposalState.model_validate_json(raw))
        for (tenant, claw), hb in self._presence.items():
            if mine(tenant):
                gs.restore_presence(tenant, claw, hb)
        for (tenant, key), version in self._facts.items():
            if mine(tenant):
                gs.restore_fact(tenant, key, version)
        gs.clear_dirty()
        return gs

    def save(self, gs: GovernanceState) -> None:
        for k in gs.dirty_proposals:
            self._proposals[k] = gs.proposals[k].model_dump_json()
        for t, c in gs.dirty_presence:
            self._presence[(t, c)] = gs.presence[t][c]
        for k in gs.dirty_facts:
            self._facts[k] = gs.facts[k]
        gs.clear_dirty()


class PostgresGovernanceStore:
    def __init__(self, conn: psycopg.Connection[tuple[object, ...]]) -> None:
        self._conn = conn

    def load(self, cfg: VotingConfig, owns: Owns = None) -> GovernanceState:
        gs = GovernanceState(cfg)
        conn = self._conn
        mine = owns or (lambda _tenant: True)
        for tenant, state in conn.execute("SELECT tenant, state FROM govproc.proposals"):
            if mine(str(tenant)):
                gs.restore_proposal(ProposalState.model_validate_json(str(state)))  # text: migration 23
        for tenant, claw, last_seen, ok, runs in conn.execute(
            "SELECT tenant, claw_id, last_seen, ok, runs FROM govproc.presence"
        ):
            if mine(str(tenant)):
                history = (Presence.of(Heartbeat(int(str(last_seen)), bool(ok))) if runs is None
                           else presence_from_json(str(runs)))  # fmt: skip
                gs.restore_presence(str(tenant), str(claw), history)
        for tenant, key, version in conn.execute("SELECT tenant, fact_key, version FROM govproc.facts"):
            if mine(str(tenant)):
                gs.restore_fact(str(tenant), str(key), int(str(version)))
        gs.clear_dirty()
        return gs

    def save(self, gs: GovernanceState) -> None:
        with self._conn.cursor() as cur:
            if gs.dirty_proposals:
                cur.executemany(
                    "INSERT INTO govproc.proposals (tenant, proposal_id, state) VALUES (%s, %s, %s) "
                    "ON CONFLICT (tenant, proposal_id) DO UPDATE SET state = excluded.state",
                    [(t, p, gs.proposals[(t, p)].model_dump_json()) for t, p in sorted(gs.dirty_proposals)],
                )
            if gs.dirty_presence:
                cur.executemany(
                    "INSERT INTO govproc.presence (tenant, claw_id, last_seen, ok, runs) VALUES (%s, %s, %s, %s, %s) "
                    "ON CONFLICT (tenant, claw_id) DO UPDATE "
                    "SET last_seen = excluded.last_seen, ok = excluded.ok, runs = excluded.runs",
                    [_presence_row(t, c, gs.presence[t][c]) for t, c in sorted(gs.dirty_presence)],
                )
            if gs.dirty_facts:
                cur.executemany(
                    "INSERT INTO govproc.facts (tenant, fact_key, version) VALUES (%s, %s, %s) "
                    "ON CONFLICT (tenant, fact_key) DO UPDATE SET version = excluded.version",
                    [(t, k, gs.facts[(t, k)]) for t, k in sorted(gs.dirty_facts)],
                )
        gs.clear_dirty()
