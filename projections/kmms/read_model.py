"""KMMS read model (seed 000 §2): one claw's (or one of its users') layered memory.

Tables (schema ``kmms``), every row tenant-scoped by row-level security:
- ``kmms_episodes``: L4, verbatim and immutable (only an erasure blanks the text), with the
  enrichment's entities and topics and a conversation's turns as a layout over its text (``turn_layout``:
  a KSTAR export carries it, so an import cuts the same rounds); ``kmms_units``: its rounds/paragraphs with a
  full-text vector (the words its owner said in them, ``said`` and ``said_tsv``, were dropped by migration 39:
  no rule has read them since 2026-12-05);
- ``kmms_nodes``: L1 abstractions, L2 facts, L3 summaries with versions, validity windows,
  status CURRENT/SUPERSEDED and SUPERSEDES links, strength and reinforcement;
- ``kmms_l0``: the availability index (entities and topics per memory: an O(1) primary-key probe);
- ``kmms_vectors``: one vector per (tenant, unit, sentence of a unit, or node; model), ``kind`` unit, sentence or
  node, ``voice`` asked, told, reply or '' (``governance/kmms/voice.py``; episode ids are the tenant's own, so
  two tenants' units may share an id);
  one partial HNSW index per model
  (m=16, ef_construction=64), so two models' vectors never share an index;
- ``kmms_contradictions``: every contradiction with its class and resolution;
- ``kmms_erasures``: every erasure of a memory (``MEMORY_ERASED``): the rows above of that memory are deleted,
  and any later-folded event caused before the erasure (an episode's enrichment, a summary, a vector still in
  flight) is skipped: by its ``at`` (its episode's log time) against the erasure's, and for a vector, by its
  cause's offset on ``hivemem.kmms.events`` against the erasure's (one memory, one partition). A vector keeps
  its cause's position (``cause_partition``, ``cause_offset``), so an erasure deletes exactly the vectors
  caused before it, however the two topics interleave.
Folds are keyed by ids from the log, so a replay rebuilds the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from contracts.kmms_records import KmmsEvent, decode_kmms
from contracts.kmms_vectors import VectorRecord, decode_vector_record
from contracts.positions import LogPosition, PositionError
from contracts.topics import TopicNames
from governance.kmms.units import is_sentence, unit_of
from projections.kmms.events import EP_COLUMNS, NODE_COLUMNS, fold_events
from projections.kmms.sql import UNIT_OF_SQL
from projections.read_models import DigestTable, Table, copy_insert, schema_ddl, tenant_table
from projections.vectors import binary_types
from projections.vectors import index_name as model_index_name
from streams.records import LogRecord

Cur = psycopg.Cursor[tuple[object, ...]]
DIM = 384
_EP, _NODE = EP_COLUMNS, NODE_COLUMNS
Who = tuple[str, str, str]  # tenant, claw, scope: one memory
Key = tuple[str, str]  # tenant, unit id


@dataclass(frozen=True)
class ErasureMark:
    at: int  # the erasure's log time
    partition: int  # its place on hivemem.kmms.events
    offset: int

    def covers_event(self, ev: KmmsEvent) -> bool:
        return ev.at <= self.at

    def covers_vector(self, e: VectorRecord) -> bool:
        cause = _cause(e)
        return cause is not None and cause.partition == self.partition and cause.offset < self.offset


def index_name(model: str) -> str:
    return "kmms_" + model_index_name(model)


_TABLES = (
    Table("kmms_episodes", (
        ("tenant", "text NOT NULL"), ("claw_id", "text NOT NULL"), ("scope", "text NOT NULL"),
        ("episode_id", "text NOT NULL"), ("session_id", "text NOT NULL"), ("thread_id", "text NOT NULL"),
        ("content_type", "text NOT NULL"), ("occurred_at", "bigint NOT NULL"), ("content", "text NOT NULL"),
        ("content_hash", "text NOT NULL"), ("redacted", "text[] NOT NULL"), ("envelope_event_id", "text"),
        ("event_id", "text NOT NULL"), ("logged_at", "bigint NOT NULL"), ("primary_entity", "text"),
        ("primary_topic", "text"), ("entities", "text[] NOT NULL DEFAULT '{}'"),
        ("topics", "text[] NOT NULL DEFAULT '{}'"), ("erased", "boolean NOT NULL DEFAULT false"),
        # A conversation's turns as a layout over ``content`` (governance/transcripts.py, ``turn_layout``).
        ("turn_layout", "jsonb NOT NULL DEFAULT '[]'"),
    ), ("tenant", "episode_id")),
    Table("kmms_units", (
        ("tenant", "text NOT NULL"), ("claw_id", "text NOT NULL"), ("scope", "text NOT NULL"),
        ("unit_id", "text NOT NULL"), ("episode_id", "text NOT NULL"), ("session_id", "text NOT NULL"),
        ("thread_id", "text NOT NULL"), ("ordinal", "int NOT NULL"), ("text", "text NOT NULL"),
        ("occurred_at", "bigint NOT NULL"), ("logged_at", "bigint NOT NULL"),
        ("tsv", "tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED"),
        # Its length in lexemes, BM25's document length: read without reading the tsvector (migration 29).
        ("lexemes", "int GENERATED ALWAYS AS (length(to_tsvector('english', text))) STORED"),
    ), ("tenant", "unit_id")),
    Table("kmms_nodes", (
        ("tenant", "text NOT NULL"), ("claw_id", "text NOT NULL"), ("scope", "text NOT NULL"),
        ("node_id", "text NOT NULL"), ("layer", "int NOT NULL"), ("entity", "text NOT NULL"),
        ("topic", "text NOT NULL"), ("time_window", "text"), ("content", "text NOT NULL"), ("version", "int NOT NULL"),
        ("supersedes", "text"), ("valid_from", "bigint NOT NULL"), ("event_time", "bigint NOT NULL"),
        ("fact_key", "text"), ("fact_value", "text"), ("fact_type", "text"),
        ("confidence", "double precision NOT NULL"), ("context", "text"), ("source_ids", "text[] NOT NULL"),
        ("model", "text NOT NULL"), ("logged_at", "bigint NOT NULL"), ("last_verified", "bigint"),
        ("status", "text NOT NULL DEFAULT 'CURRENT'"), ("superseded_by", "text"), ("valid_until", "bigint"),
        ("strength", "double precision NOT NULL DEFAULT 1.0"), ("reinforcements", "int NOT NULL DEFAULT 0"),
        ("flagged", "boolean NOT NULL DEFAULT false"), ("cues", "text NOT NULL DEFAULT ''"),
        ("tsv", "tsvector GENERATED ALWAYS AS (to_tsvector('english', cues || ' ' || content)) STORED"),
        ("lexemes", "int GENERATED ALWAYS AS (length(to_tsvector('english', cues || ' ' || content))) STORED"),
    ), ("tenant", "node_id"),
        # What an event writes (projections/kmms/events.py), then the state the folds keep.
        digest_order=(*_NODE.split(", "), "status", "superseded_by", "valid_until", "strength", "reinforcements",
                      "flagged")),
    Table("kmms_l0", (
        ("tenant", "text NOT NULL"), ("claw_id", "text NOT NULL"), ("scope", "text NOT NULL"),
        ("kind", "text NOT NULL"), ("term", "text NOT NULL"), ("entity_kind", "text"),
        ("first_seen", "bigint NOT NULL"), ("episodes", "int NOT NULL"),
    ), ("tenant", "claw_id", "scope", "kind", "term")),
    Table("kmms_vectors", (
        ("unit_id", "text NOT NULL"), ("model", "text NOT NULL"), ("tenant", "text NOT NULL"),
        ("claw_id", "text NOT NULL"), ("scope", "text NOT NULL"), ("kind", "text NOT NULL"),
        ("embedding", f"vector({DIM}) NOT NULL"), ("cause_partition", "int"), ("cause_offset", "bigint"),
        ("voice", "text NOT NULL DEFAULT ''"),
        # A unit's or sentence's vector carries its unit's event time (migration 34): a time window's vectors are
        # read by ``kmms_vectors_time``, not unit by unit through the units' table. NULL for a node's, and for a
        # vector folded before its unit (set when the unit is: ``time_untimed_vectors``).
        ("occurred_at", "bigint"),
        # A unit vector's token states (migration 36, ``governance.token_states``); NULL for the others, and before.
        ("tokens", "bytea"),
    ), ("tenant", "unit_id", "model"),
        # A vector by the MD5 of its binary form: as text, 384 floats formatted a row, it was most of a digest's time.
        digest_as=(("embedding", "md5(vector_send(embedding)) AS embedding"), ("tokens", "md5(tokens) AS tokens")),
        digest_order=("tenant", "claw_id", "scope", "unit_id", "model", "kind", "voice", "cause_partition",
                      "cause_offset", "embedding", "occurred_at", "tokens")),
    Table("kmms_contradictions", (
        ("tenant", "text NOT NULL"), ("claw_id", "text NOT NULL"), ("scope", "text NOT NULL"),
        ("event_id", "text NOT NULL"), ("old_node", "text NOT NULL"), ("new_node", "text NOT NULL"),
        ("class", "text NOT NULL"), ("resolution", "text NOT NULL"), ("at", "bigint NOT NULL"),
    ), ("tenant", "event_id")),
    Table("kmms_erasures", (
        ("tenant", "text NOT NULL"), ("claw_id", "text NOT NULL"), ("scope", "text NOT NULL"),
        ("event_id", "text NOT NULL"), ("erasure_id", "text NOT NULL"), ("envelope_event_id", "text"),
        ("reason", "text"), ("erased_at", "bigint NOT NULL"), ("log_partition", "int NOT NULL"),
        ("log_offset", "bigint NOT NULL"),
    ), ("tenant", "event_id")),
)  # fmt: skip
_BY_NAME = {t.name: t for t in _TABLES}
# The tables of a memory's content: an erasure deletes its rows from them. kmms_erasures, the record of the
# erasures, came with migration 14 and has its own idempotent DDL (erasures_ddl).
TABLES = tuple(t.name for t in _TABLES if t.name != "kmms_erasures")


def vector_time_indexes(schema: str) -> list[str]:
    """A memory's unit and sentence vectors by their unit's event time (a search's time window reads them in one
    range scan), and the few whose unit is not folded yet, by that unit's id (``time_untimed_vectors`` probes it
    for each unit it folds: a catch-up whose vectors ran ahead left thousands there, and reading them all for
    every batch cost the live projector 13 % of its rate)."""
    return [
        f"CREATE INDEX IF NOT EXISTS kmms_vectors_time ON {schema}.kmms_vectors "
        f"(tenant, claw_id, scope, model, occurred_at) WHERE kind IN ('unit', 'sentence')",
        f"CREATE INDEX IF NOT EXISTS kmms_vectors_untimed ON {schema}.kmms_vectors (tenant, "
        f"({UNIT_OF_SQL.replace('{v}.', '')})) WHERE occurred_at IS NULL AND kind IN ('unit', 'sentence')",
    ]


class KmmsProjection:
    name: str = "kmms"
    tables: tuple[DigestTable, ...] = tuple(t.digest() for t in _TABLES)

    def __init__(self) -> None:
        self._indexed: set[tuple[str, str]] = set()

    def topics(self, names: TopicNames) -> list[str]:
        return names.kmms_topics()

    def ddl(self, schema: str) -> list[str]:
        s = schema
        return [
            *schema_ddl(s),
            _BY_NAME["kmms_episodes"].create(s),
            f"CREATE INDEX kmms_ep_scope ON {s}.kmms_episodes (tenant, claw_id, scope, occurred_at)",
            f"CREATE INDEX kmms_ep_event ON {s}.kmms_episodes (tenant, envelope_event_id)",
            _BY_NAME["kmms_units"].create(s),
            f"CREATE INDEX kmms_units_tsv ON {s}.kmms_units USING gin (tsv)",
            f"CREATE INDEX kmms_units_scope ON {s}.kmms_units (tenant, claw_id, scope, occurred_at)",
            _BY_NAME["kmms_nodes"].create(s),
            f"CREATE INDEX kmms_nodes_scope ON {s}.kmms_nodes (tenant, claw_id, scope, layer, entity)",
            f"CREATE INDEX kmms_nodes_tsv ON {s}.kmms_nodes USING gin (tsv)",
            _BY_NAME["kmms_l0"].create(s),
            _BY_NAME["kmms_vectors"].create(s),
            f"CREATE INDEX kmms_vectors_scope ON {s}.kmms_vectors (tenant, claw_id, scope, model, kind)",
            *vector_time_indexes(s),
            _BY_NAME["kmms_contradictions"].create(s),
            *[x for t in TABLES for x in tenant_table(s, t)],
            *self.erasures_ddl(s),
        ]

    @staticmethod
    def erasures_ddl(schema: str) -> list[str]:
        # Idempotent: migration 14 adds it to databases made before erasure existed.
        return [
            _BY_NAME["kmms_erasures"].create(schema, if_not_exists=True),
            f"CREATE INDEX IF NOT EXISTS kmms_erasures_scope ON {schema}.kmms_erasures (tenant, claw_id, scope)",
            f"CREATE INDEX IF NOT EXISTS kmms_erasures_event ON {schema}.kmms_erasures (tenant, envelope_event_id)",
            f"DROP POLICY IF EXISTS tenant_isolation ON {schema}.kmms_erasures",
            *tenant_table(schema, "kmms_erasures"),
        ]

    def fold(self, cur: Cur, schema: str, records: list[LogRecord]) -> None:
        decoded: list[tuple[LogRecord, KmmsEvent | VectorRecord]] = [(rec, _decode(rec)) for rec in records]
        marks = self._marks(cur, schema, {(x.tenant, x.claw_id, x.scope) for _, x in decoded})
        vectors: list[VectorRecord] = []  # written together (one COPY), before any erasure that follows them
        events: list[KmmsEvent] = []
        for rec, x in decoded:
            mark = marks.get((x.tenant, x.claw_id, x.scope))
            if isinstance(x, VectorRecord):
                if mark is None or not mark.covers_vector(x):
                    vectors.append(x)
            elif x.kind == "MEMORY_ERASED":
                fold_events(cur, schema, events)
                self._embeddings(cur, schema, vectors)
                events, vectors = [], []
                marks[(x.tenant, x.claw_id, x.scope)] = self._erase(cur, schema, x, rec)
            elif mark is None or not mark.covers_event(x):
                events.append(x)
        fold_events(cur, schema, events)
        self._embeddings(cur, schema, vectors)

    @staticmethod
    def _marks(cur: Cur, s: str, memories: set[Who]) -> dict[Who, ErasureMark]:
        """The last erasure of each memory in the batch (one query per batch, not per record)."""
        if not memories:
            return {}
        t, c, sc = (list(col) for col in zip(*sorted(memories), strict=True))
        cur.execute(
            f"SELECT DISTINCT ON (tenant, claw_id, scope) tenant, claw_id, scope, erased_at, log_partition, "
            f"log_offset FROM {s}.kmms_erasures WHERE (tenant, claw_id, scope) IN "
            "(SELECT * FROM unnest(%s::text[], %s::text[], %s::text[])) "
            "ORDER BY tenant, claw_id, scope, log_offset DESC",
            (t, c, sc),
        )
        rows: list[Any] = cur.fetchall()
        return {(r[0], r[1], r[2]): ErasureMark(int(r[3]), int(r[4]), int(r[5])) for r in rows}

    @staticmethod
    def _erase(cur: Cur, s: str, ev: KmmsEvent, rec: LogRecord) -> ErasureMark:
        who = (ev.tenant, ev.claw_id, ev.scope)
        # Vectors come on their own topic, so a replay folds some before the erasure that the live
        # projector folded after it, and the reverse. Whatever the interleaving, a vector stays iff no
        # erasure of its memory follows its cause on the memory's partition: delete those whose cause
        # comes before this erasure (a later one of theirs is skipped by the mark). A vector stored
        # before migration 25 has no cause position: it goes with the units and nodes the memory holds.
        mine = "tenant = %s AND claw_id = %s AND scope = %s"
        cur.execute(f"DELETE FROM {s}.kmms_vectors WHERE {mine} AND (cause_partition = %s AND cause_offset < %s "
                    f"OR cause_offset IS NULL AND (regexp_replace(unit_id, '~s[0-9]+$', '') IN "
                    f"(SELECT unit_id FROM {s}.kmms_units WHERE {mine}) OR unit_id IN (SELECT node_id FROM "
                    f"{s}.kmms_nodes WHERE {mine})))", (*who, rec.partition, rec.offset, *who, *who))  # fmt: skip
        for table in TABLES:
            if table != "kmms_vectors":
                cur.execute(f"DELETE FROM {s}.{table} WHERE {mine}", who)
        cur.execute(
            f"INSERT INTO {s}.kmms_erasures VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
            (*who, ev.event_id, ev.node_id or "", ev.related_id, ev.detail, ev.at, rec.partition, rec.offset),
        )
        return ErasureMark(ev.at, rec.partition, rec.offset)

    def _embeddings(self, cur: Cur, s: str, batch: list[VectorRecord]) -> None:
        for e in batch:
            if len(e.vector) != DIM:
                raise ValueError(f"embedding of {e.unit_id} has {len(e.vector)} dimensions, not {DIM}")
            # The search's HNSW index of the model, on the live tables only: a replay's shadow is compared and
            # copied into them, never searched (an index kept up to date insert by insert in the shadow took most
            # of a KMMS replay's fold).
            if s == self.name and (s, e.model) not in self._indexed:
                cur.execute(f"CREATE INDEX IF NOT EXISTS {index_name(e.model)} ON {s}.kmms_vectors "
                            f"USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64) "
                            f"WHERE model = {_literal(e.model)}")  # fmt: skip
                self._indexed.add((s, e.model))
        kinds = [_kind(e.unit_id) for e in batch]
        times = _unit_times(cur, s, {(e.tenant, unit_of(e.unit_id)) for e, k in zip(batch, kinds, strict=True)
                                     if k != "node"})  # fmt: skip
        rows: list[tuple[object, ...]] = []
        for e, kind in zip(batch, kinds, strict=True):
            cause = _cause(e)
            rows.append((e.unit_id, e.model, e.tenant, e.claw_id, e.scope, kind, e.vector,
                         None if cause is None else cause.partition, None if cause is None else cause.offset,
                         e.voice, None if kind == "node" else times.get((e.tenant, unit_of(e.unit_id))),
                         e.tokens or None))  # fmt: skip
        copy_insert(cur, s, "kmms_vectors", ", ".join(_VECTOR_COLUMNS), rows, binary_types(cur, _VECTOR_TYPES))


_VECTOR_COLUMNS = ("unit_id", "model", "tenant", "claw_id", "scope", "kind", "embedding", "cause_partition",
                   "cause_offset", "voice", "occurred_at", "tokens")  # fmt: skip
_VECTOR_TYPES = ("text", "text", "text", "text", "text", "text", "vector", "int4", "int8", "text", "int8", "bytea")


def _kind(vector_id: str) -> str:
    return "sentence" if is_sentence(vector_id) else "unit" if "#" in vector_id else "node"


def _unit_times(cur: Cur, s: str, units: set[Key]) -> dict[Key, int]:
    """The event time of each of ``units`` (tenant, unit id) already folded."""
    if not units:
        return {}
    t, u = (list(c) for c in zip(*sorted(units), strict=True))
    cur.execute(f"SELECT tenant, unit_id, occurred_at FROM {s}.kmms_units WHERE (tenant, unit_id) IN "
                "(SELECT * FROM unnest(%s::text[], %s::text[]))", (t, u))  # fmt: skip
    return {(str(r[0]), str(r[1])): int(str(r[2])) for r in cur.fetchall()}


def _cause(e: VectorRecord) -> LogPosition | None:
    """The position on ``hivemem.kmms.events`` of the event a vector was computed for."""
    try:
        return LogPosition.parse(e.source)
    except PositionError:
        return None


def _decode(rec: LogRecord) -> KmmsEvent | VectorRecord:
    if rec.topic.endswith("kmms.embeddings"):
        return decode_vector_record(rec.value or b"")
    return decode_kmms(rec.value or b"", KmmsEvent)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
