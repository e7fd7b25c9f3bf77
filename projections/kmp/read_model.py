"""KMP read model (seed 001): navigable process memory, one about at a time.

Tables (schema ``kmp``), every row tenant-scoped by row-level security, every row stamped with
``known_at``: the broker log time at which HiveMem learnt it (X-26), which every read filters on so
a question asked "as known at t" sees nothing written later.
- ``kmp_ingests``: one row per graded ingest: provenance and its relation-quality counts;
- ``kmp_dimensions``: an about's memory planes (identity ``about:<about>:dimension:<id>``);
- ``kmp_entries``: entries with their event time (``occurred_at``), coordinates and a text vector;
- ``kmp_relations``: writer-declared relations with class, why, evidence refs and the kernel's grade;
- ``kmp_evidence``: proof attached to entries.
``seq`` orders rows of an about: the graded ingest's offset on ``hivemem.kmp.events`` (one about,
one partition) times 1024 plus the item's index, so a replay rebuilds the same order.
"""

from __future__ import annotations

import json

import psycopg

from contracts.kmp_records import KmpEvent, decode_kmp
from contracts.topics import TopicNames
from projections.read_models import DigestTable, Table, copy_insert, schema_ddl, tenant_table
from streams.records import LogRecord

Cur = psycopg.Cursor[tuple[object, ...]]
SEQ_STRIDE = 1024  # > the 256 items a list may hold
_TABLES = (
    Table("kmp_ingests", (
        ("tenant", "text NOT NULL"), ("about", "text NOT NULL"), ("ingest_id", "text NOT NULL"),
        ("claw_id", "text NOT NULL"), ("known_at", "bigint NOT NULL"), ("source", "text NOT NULL"),
        ("envelope_event_id", "text NOT NULL"), ("trace_id", "text NOT NULL"), ("source_kind", "text NOT NULL"),
        ("source_agent", "text NOT NULL"), ("entries", "int NOT NULL"), ("relations", "int NOT NULL"),
        ("evidence", "int NOT NULL"), ("rich", "int NOT NULL"), ("anemic", "int NOT NULL"),
        ("structural", "int NOT NULL"), ("suspect", "int NOT NULL"), ("context_refs", "int NOT NULL"),
        ("context_seen", "int NOT NULL"), ("evidence_coverage", "double precision NOT NULL"),
    ), ("tenant", "about", "ingest_id")),
    Table("kmp_dimensions", (
        ("tenant", "text NOT NULL"), ("about", "text NOT NULL"), ("dimension_id", "text NOT NULL"),
        ("kind", "text NOT NULL"), ("title", "text NOT NULL"), ("known_at", "bigint NOT NULL"),
    ), ("tenant", "about", "dimension_id")),
    Table("kmp_entries", (
        ("tenant", "text NOT NULL"), ("about", "text NOT NULL"), ("entry_id", "text NOT NULL"),
        ("kind", "text NOT NULL"), ("text", "text NOT NULL"), ("occurred_at", "bigint NOT NULL"),
        ("valid_from", "bigint"), ("valid_until", "bigint"), ("known_at", "bigint NOT NULL"),
        ("seq", "bigint NOT NULL"), ("ingest_id", "text NOT NULL"), ("claw_id", "text NOT NULL"),
        ("source_agent", "text NOT NULL"), ("dims", "text[] NOT NULL"), ("coordinates", "jsonb NOT NULL"),
        ("metadata", "jsonb NOT NULL"),
        ("tsv", "tsvector GENERATED ALWAYS AS (to_tsvector('english', kind || ' ' || text)) STORED"),
    ), ("tenant", "about", "entry_id")),
    Table("kmp_relations", (
        ("tenant", "text NOT NULL"), ("about", "text NOT NULL"), ("seq", "bigint NOT NULL"),
        ("source_ref", "text NOT NULL"), ("target_ref", "text NOT NULL"), ("rel", "text NOT NULL"),
        ("semantic_class", "text NOT NULL"), ("why", "text NOT NULL"), ("evidence_refs", "text[] NOT NULL"),
        ("confidence", "double precision"), ("quality", "text NOT NULL"), ("reason", "text NOT NULL"),
        ("known_at", "bigint NOT NULL"), ("ingest_id", "text NOT NULL"),
    ), ("tenant", "about", "seq")),
    Table("kmp_evidence", (
        ("tenant", "text NOT NULL"), ("about", "text NOT NULL"), ("evidence_id", "text NOT NULL"),
        ("text", "text NOT NULL"), ("supports", "text[] NOT NULL"), ("source", "text NOT NULL"),
        ("known_at", "bigint NOT NULL"), ("seq", "bigint NOT NULL"), ("ingest_id", "text NOT NULL"),
    ), ("tenant", "about", "evidence_id")),
)  # fmt: skip
_BY_NAME = {t.name: t for t in _TABLES}
TABLES = tuple(_BY_NAME)


class KmpProjection:
    name: str = "kmp"
    tables: tuple[DigestTable, ...] = tuple(t.digest() for t in _TABLES)

    def topics(self, names: TopicNames) -> list[str]:
        return [names.kmp_events]

    def ddl(self, schema: str) -> list[str]:
        s, t = schema, _BY_NAME
        return [
            *schema_ddl(s),
            t["kmp_ingests"].create(s),
            f"CREATE INDEX kmp_ingests_event ON {s}.kmp_ingests (tenant, envelope_event_id)",
            t["kmp_dimensions"].create(s),
            t["kmp_entries"].create(s),
            f"CREATE INDEX kmp_entries_time ON {s}.kmp_entries (tenant, about, occurred_at, known_at, seq)",
            f"CREATE INDEX kmp_entries_tsv ON {s}.kmp_entries USING gin (tsv)",
            t["kmp_relations"].create(s),
            f"CREATE INDEX kmp_rel_source ON {s}.kmp_relations (tenant, about, source_ref)",
            f"CREATE INDEX kmp_rel_target ON {s}.kmp_relations (tenant, about, target_ref)",
            t["kmp_evidence"].create(s),
            f"CREATE INDEX kmp_evidence_supports ON {s}.kmp_evidence USING gin (supports)",
            *[x for name in TABLES for x in tenant_table(s, name)],
        ]

    def fold(self, cur: Cur, schema: str, records: list[LogRecord]) -> None:
        rows: dict[str, list[tuple[object, ...]]] = {t: [] for t in TABLES}
        for rec in records:
            self._rows(rows, decode_kmp(rec.value or b""), rec.offset * SEQ_STRIDE)
        for table in _TABLES:
            if rows[table.name]:
                _bulk_insert(cur, schema, table, rows[table.name])

    @staticmethod
    def _rows(rows: dict[str, list[tuple[object, ...]]], ev: KmpEvent, base: int) -> None:
        p, t, a, at = ev.ingest, ev.tenant, ev.about, ev.at
        q = [g.quality for g in ev.grades]
        non_structural = [r for r, g in zip(p.relations, ev.grades, strict=True) if g.quality != "STRUCTURAL"]
        coverage = sum(1 for r in non_structural if r.evidence_refs) / len(non_structural) if non_structural else 1.0
        rows["kmp_ingests"].append(
            (t, a, p.ingest_id, ev.claw_id, at, ev.source, ev.envelope_event_id, ev.trace_id,
             p.provenance.source_kind, p.provenance.source_agent, len(p.entries), len(p.relations), len(p.evidence),
             q.count("RICH"), q.count("ANEMIC"), q.count("STRUCTURAL"), q.count("SUSPECT"), len(p.context_refs),
             ev.context_seen, coverage))  # fmt: skip
        rows["kmp_dimensions"] += [(t, a, d.id, d.kind, d.title, at) for d in p.dimensions]
        rows["kmp_entries"] += [
            (t, a, e.id, e.kind, e.text, e.occurred_at, e.valid_from, e.valid_until, at, base + i, p.ingest_id,
             ev.claw_id, p.provenance.source_agent, [c.dimension for c in e.coordinates],
             json.dumps([c.to_wire() for c in e.coordinates]), json.dumps(e.metadata, sort_keys=True))
            for i, e in enumerate(p.entries)]  # fmt: skip
        rows["kmp_relations"] += [
            (t, a, base + i, r.source_ref, r.target_ref, r.rel, r.semantic_class, r.why, list(r.evidence_refs),
             r.confidence, g.quality, g.reason, at, p.ingest_id)
            for i, (r, g) in enumerate(zip(p.relations, ev.grades, strict=True))]  # fmt: skip
        rows["kmp_evidence"] += [(t, a, v.id, v.text, list(v.supports), v.source, at, base + 512 + i, p.ingest_id)
                                 for i, v in enumerate(p.evidence)]  # fmt: skip


def _bulk_insert(cur: Cur, schema: str, table: Table, rows: list[tuple[object, ...]]) -> None:
    """Insert what is new (``copy_insert``). The first row of a key in the batch wins, as row-by-row
    inserts with ON CONFLICT DO NOTHING would (a dimension declared twice keeps its first title).
    A row holds the table's columns in order (``Table.names``), its key first."""
    key = len(table.primary_key)
    unique = list({r[:key]: r for r in reversed(rows)}.values())[::-1]
    copy_insert(cur, schema, table.name, table.names, unique)
