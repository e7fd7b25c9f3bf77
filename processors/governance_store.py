"""The governance processor's durable state, in Postgres schema ``govproc``.

One transaction per batch writes what the batch changed (proposals, presence, fact versions),
the outputs it produced (the outbox) and the input offsets it consumed. So after a crash
the processor resumes from exactly the state that matches its offsets, and every output it
decided on is in the outbox, sent or not. The tables are made by migration 7
(``projections.migrations``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import psycopg

from governance.quorum import Heartbeat
from governance.voting import GovernanceState, ProposalState, VotingConfig
from projections.log_records import LogRecord
from projections.projector import store_offsets

Conn = psycopg.Connection[tuple[object, ...]]


@dataclass(frozen=True)
class OutboxRow:
    seq: int
    event_id: str
    topic: str
    partition: int
    key: bytes | None
    value: bytes


@dataclass(frozen=True)
class NewOutput:
    event_id: str
    topic: str
    partition: int
    key: bytes | None
    value: bytes


def load_state(conn: Conn, cfg: VotingConfig) -> GovernanceState:
    gs = GovernanceState(cfg)
    for (state,) in conn.execute("SELECT state FROM govproc.proposals"):
        gs.restore_proposal(ProposalState.model_validate(state))
    for tenant, claw, last_seen, ok in conn.execute("SELECT tenant, claw_id, last_seen, ok FROM govproc.presence"):
        gs.restore_presence(str(tenant), str(claw), Heartbeat(int(str(last_seen)), bool(ok)))
    for tenant, key, version in conn.execute("SELECT tenant, fact_key, version FROM govproc.facts"):
        gs.restore_fact(str(tenant), str(key), int(str(version)))
    gs.clear_dirty()
    return gs


def save_batch(cur: psycopg.Cursor[tuple[object, ...]], gs: GovernanceState, outputs: Iterable[NewOutput],
               consumer: str, records: list[LogRecord]) -> None:  # fmt: skip
    """Everything one batch changed, in the caller's transaction."""
    if gs.dirty_proposals:
        cur.executemany(
            "INSERT INTO govproc.proposals (tenant, proposal_id, state) VALUES (%s, %s, %s) "
            "ON CONFLICT (tenant, proposal_id) DO UPDATE SET state = excluded.state",
            [(t, p, gs.proposals[(t, p)].model_dump_json()) for t, p in sorted(gs.dirty_proposals)],
        )
    if gs.dirty_presence:
        cur.executemany(
            "INSERT INTO govproc.presence (tenant, claw_id, last_seen, ok) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (tenant, claw_id) DO UPDATE SET last_seen = excluded.last_seen, ok = excluded.ok",
            [(t, c, gs.presence[t][c].last_seen, gs.presence[t][c].ok) for t, c in sorted(gs.dirty_presence)],
        )
    if gs.dirty_facts:
        cur.executemany(
            "INSERT INTO govproc.facts (tenant, fact_key, version) VALUES (%s, %s, %s) "
            "ON CONFLICT (tenant, fact_key) DO UPDATE SET version = excluded.version",
            [(t, k, gs.facts[(t, k)]) for t, k in sorted(gs.dirty_facts)],
        )
    cur.executemany(
        "INSERT INTO govproc.outbox (event_id, topic, partition, key, value) VALUES (%s, %s, %s, %s, %s)",
        [(o.event_id, o.topic, o.partition, o.key, o.value) for o in outputs],
    )
    store_offsets(cur, consumer, records)


def unsent(conn: Conn, limit: int = 5000) -> list[OutboxRow]:
    rows = conn.execute("SELECT seq, event_id, topic, partition, key, value FROM govproc.outbox WHERE NOT sent "
                        "ORDER BY seq LIMIT %s", (limit,)).fetchall()  # fmt: skip
    return [OutboxRow(int(str(r[0])), str(r[1]), str(r[2]), int(str(r[3])), r[4], r[5]) for r in rows]  # type: ignore[arg-type]


def mark_sent(conn: Conn, seqs: list[int]) -> None:
    conn.execute("UPDATE govproc.outbox SET sent = true WHERE seq = ANY(%s)", (seqs,))


def set_marks(conn: Conn, marks: dict[tuple[str, int], int]) -> None:
    with conn.transaction():
        conn.execute("DELETE FROM govproc.publish_marks")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO govproc.publish_marks (topic, partition, from_offset) VALUES (%s, %s, %s)",
                            [(t, p, o) for (t, p), o in marks.items()])  # fmt: skip


def get_marks(conn: Conn) -> dict[tuple[str, int], int]:
    rows = conn.execute("SELECT topic, partition, from_offset FROM govproc.publish_marks").fetchall()
    return {(str(r[0]), int(str(r[1]))): int(str(r[2])) for r in rows}
