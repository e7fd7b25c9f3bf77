"""KSTAR read model (seed 003): each memory's records as they now read, and every verdict.

Tables (schema ``kstar``), tenant-scoped by row-level security:
- ``records``: one row per (memory, kind, record id): traces, perceptions, facts, skills, control
  tokens and the memory's registrations (schemas, trace categories, token types), each as its
  canonical JSON document, with ``known_at`` (broker log time of the last change) and ``first_known_at``;
- ``history``: one row per judged operation (STORED, UNCHANGED, CONFLICT, FORGOTTEN), in log order:
  an import's report, a sync's delta ("what changed since") and the audit of a memory read it.
A FORGOTTEN outcome removes the memory's records of the kinds it names; its history rows stay
(they hold hashes and ids, not content).
"""

from __future__ import annotations

import psycopg

from contracts.kstar_records import KstarEvent, decode_kstar
from contracts.topics import TopicNames
from projections.read_models import DigestTable, Table, copy_insert, schema_ddl, tenant_table
from streams.records import LogRecord

Cur = psycopg.Cursor[tuple[object, ...]]
_RECORDS, _HISTORY = (
    Table("records", (
        ("tenant", "text NOT NULL"), ("memory", "text NOT NULL"), ("kind", "text NOT NULL"),
        ("record_id", "text NOT NULL"), ("name", "text NOT NULL"), ("doc", "jsonb NOT NULL"),
        ("content_hash", "text NOT NULL"), ("record_time", "text NOT NULL"), ("known_at", "bigint NOT NULL"),
        ("first_known_at", "bigint NOT NULL"), ("origin", "text NOT NULL"), ("origin_ref", "text NOT NULL"),
        ("claw_id", "text NOT NULL"),
        ("tsv", "tsvector GENERATED ALWAYS AS (jsonb_to_tsvector('english', doc, '[\"string\"]')) STORED"),
    ), ("tenant", "memory", "kind", "record_id")),
    Table("history", (
        ("tenant", "text NOT NULL"), ("memory", "text NOT NULL"), ("seq", "bigint NOT NULL"),
        ("op_id", "text NOT NULL"), ("op", "text NOT NULL"), ("kind", "text NOT NULL"), ("record_id", "text NOT NULL"),
        ("change", "text NOT NULL"), ("content_hash", "text NOT NULL"), ("existing_hash", "text NOT NULL"),
        ("known_at", "bigint NOT NULL"), ("origin", "text NOT NULL"), ("origin_ref", "text NOT NULL"),
        ("envelope_event_id", "text NOT NULL"), ("claw_id", "text NOT NULL"), ("forget_kinds", "text[] NOT NULL"),
    ), ("tenant", "memory", "seq")),
)  # fmt: skip
RECORD_COLS, HISTORY_COLS = _RECORDS.names, _HISTORY.names  # in the order a fold's rows hold them
Row = tuple[object, ...]


class KstarProjection:
    name: str = "kstar"
    tables: tuple[DigestTable, ...] = (_RECORDS.digest(), _HISTORY.digest())

    def topics(self, names: TopicNames) -> list[str]:
        return [names.kstar_events]

    def ddl(self, schema: str) -> list[str]:
        s = schema
        return [
            *schema_ddl(s),
            _RECORDS.create(s),
            f"CREATE INDEX kstar_records_time ON {s}.records (tenant, memory, kind, record_time)",
            f"CREATE INDEX kstar_records_known ON {s}.records (tenant, memory, known_at)",
            f"CREATE INDEX kstar_records_name ON {s}.records (tenant, memory, kind, name)",
            f"CREATE INDEX kstar_records_tsv ON {s}.records USING gin (tsv)",
            _HISTORY.create(s),
            f"CREATE INDEX kstar_history_event ON {s}.history (tenant, envelope_event_id)",
            f"CREATE INDEX kstar_history_known ON {s}.history (tenant, memory, known_at)",
            *[x for t in ("records", "history") for x in tenant_table(s, t)],
        ]

    def fold(self, cur: Cur, schema: str, records: list[LogRecord]) -> None:
        upserts: dict[tuple[object, ...], Row] = {}
        history: list[Row] = []
        for rec in records:
            ev = decode_kstar(rec.value or b"")
            # One memory lives on one partition, so its events' offsets order them.
            history.append(_history_row(ev, rec.offset))
            if ev.change == "STORED":
                row = _record_row(ev)
                earlier = upserts.get(row[:4])
                if earlier is not None:  # stored twice in this batch: the first time is its first_known_at
                    row = (*row[:9], earlier[9], *row[10:])
                upserts[row[:4]] = row
            elif ev.change == "FORGOTTEN":
                _upsert(cur, schema, list(upserts.values()))  # what the batch stored before the forget
                upserts.clear()
                cur.execute(f"DELETE FROM {schema}.records WHERE tenant = %s AND memory = %s AND kind = ANY(%s)",
                            (ev.tenant, ev.memory, ev.forget_kinds))  # fmt: skip
        _upsert(cur, schema, list(upserts.values()))
        copy_insert(cur, schema, "history", HISTORY_COLS, history)


def _record_row(ev: KstarEvent) -> Row:
    return (ev.tenant, ev.memory, ev.kind, ev.record_id, ev.name, ev.document, ev.content_hash, ev.record_time,
            ev.at, ev.at, ev.origin, ev.origin_ref, ev.claw_id)  # fmt: skip


def _history_row(ev: KstarEvent, seq: int) -> Row:
    return (ev.tenant, ev.memory, seq, ev.op_id, ev.op, ev.kind, ev.record_id, ev.change, ev.content_hash,
            ev.existing_hash, ev.at, ev.origin, ev.origin_ref, ev.envelope_event_id, ev.claw_id,
            list(ev.forget_kinds))  # fmt: skip


def _upsert(cur: Cur, schema: str, rows: list[Row]) -> None:
    """Insert or replace records (first_known_at kept): through COPY into a session-local table,
    as copy_insert does, because an import brings tens of thousands of records a batch."""
    if not rows:
        return
    tmp = f"_fold_{schema}_records"
    cur.execute(f"CREATE TEMP TABLE IF NOT EXISTS {tmp} AS SELECT {RECORD_COLS} FROM {schema}.records WITH NO DATA")
    cur.execute(f"TRUNCATE {tmp}")
    with cur.copy(f"COPY {tmp} ({RECORD_COLS}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
    updates = ", ".join(f"{c} = excluded.{c}" for c in RECORD_COLS.split(", ")
                        if c not in ("tenant", "memory", "kind", "record_id", "first_known_at"))  # fmt: skip
    cur.execute(f"INSERT INTO {schema}.records ({RECORD_COLS}) SELECT {RECORD_COLS} FROM {tmp} "
                f"ON CONFLICT (tenant, memory, kind, record_id) DO UPDATE SET {updates}")  # fmt: skip
