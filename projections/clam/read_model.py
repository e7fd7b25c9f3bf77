"""CLAM read model (seed 002): each claw's short-term buffer, long-term memory (semantic and episodic
collections, with Zettelkasten links), knowledge graph, and the stream of consciousness.

Tables (schema ``clam``), tenant-scoped by row-level security:
- ``stm``: the volatile nodes, as the last critique or refresh left them (a promoted or decayed node
  leaves; the log keeps it, so after a restart the buffer is rebuilt from the log: X-37);
- ``ltm``: promoted nodes and dual-written facts, with the collection and the links made on promotion;
- ``triples``: the knowledge graph (one row per normalised triple);
- ``activity``: every decision in log order (critiques with their debate, promotions, decays, facts).
"""

from __future__ import annotations

import json
from typing import Any

import psycopg

from contracts.clam_records import ClamEvent, decode_clam
from contracts.topics import TopicNames
from projections.read_models import DigestTable, Table, schema_ddl, tenant_table
from streams.records import LogRecord

Cur = psycopg.Cursor[tuple[object, ...]]
STRIDE = 1024  # events of one operation: seq < STRIDE

_TABLES = (
    Table("stm", (
        ("tenant", "text NOT NULL"), ("claw_id", "text NOT NULL"), ("concept_id", "text NOT NULL"),
        ("description", "text NOT NULL"), ("confidence_score", "int NOT NULL"),
        ("creation_timestamp", "bigint NOT NULL"), ("last_access_timestamp", "bigint NOT NULL"),
        ("origin_context", "text NOT NULL"), ("kind", "text NOT NULL"),
    ), ("tenant", "claw_id", "concept_id")),
    Table("ltm", (
        ("tenant", "text NOT NULL"), ("claw_id", "text NOT NULL"), ("concept_id", "text NOT NULL"),
        ("collection", "text NOT NULL"), ("description", "text NOT NULL"), ("confidence_score", "int NOT NULL"),
        ("origin_context", "text NOT NULL"), ("stored_at", "bigint NOT NULL"), ("links", "jsonb NOT NULL"),
    ), ("tenant", "claw_id", "concept_id")),
    Table("triples", (
        ("tenant", "text NOT NULL"), ("claw_id", "text NOT NULL"), ("triple_id", "text NOT NULL"),
        ("subject", "text NOT NULL"), ("predicate", "text NOT NULL"), ("object", "text NOT NULL"),
        ("category", "text NOT NULL"), ("known_at", "bigint NOT NULL"),
    ), ("tenant", "claw_id", "triple_id")),
    Table("activity", (
        ("tenant", "text NOT NULL"), ("claw_id", "text NOT NULL"), ("seq", "bigint NOT NULL"),
        ("at", "bigint NOT NULL"), ("kind", "text NOT NULL"), ("concept_id", "text NOT NULL"),
        ("envelope_event_id", "text NOT NULL"), ("text", "text NOT NULL"),
    ), ("tenant", "claw_id", "seq")),
)  # fmt: skip
TABLES = tuple(t.name for t in _TABLES)


class ClamProjection:
    name: str = "clam"
    tables: tuple[DigestTable, ...] = tuple(t.digest() for t in _TABLES)

    def topics(self, names: TopicNames) -> list[str]:
        return [names.clam_events]

    def ddl(self, schema: str) -> list[str]:
        s = schema
        return [
            *schema_ddl(s),
            *[t.create(s) for t in _TABLES],
            f"CREATE INDEX clam_activity_event ON {s}.activity (tenant, envelope_event_id)",
            *[x for t in TABLES for x in tenant_table(s, t)],
        ]

    def fold(self, cur: Cur, schema: str, records: list[LogRecord]) -> None:
        # Row by row: one claw's events depend on each other (a node created, critiqued, promoted in one batch).
        for rec in records:
            ev = decode_clam(rec.value or b"")
            _apply(cur, schema, ev, json.loads(ev.data), rec.offset * STRIDE + ev.seq)


def _apply(cur: Cur, s: str, ev: ClamEvent, data: dict[str, Any], seq: int) -> None:
    who = (ev.tenant, ev.claw_id)
    text = ""
    if ev.kind == "NODE_CREATED":
        n = data["node"]
        cur.execute(f"INSERT INTO {s}.stm (tenant, claw_id, concept_id, description, confidence_score, "
                    "creation_timestamp, last_access_timestamp, origin_context, kind) VALUES "
                    "(%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    (*who, n["concept_id"], n["description"], n["confidence_score"], n["creation_timestamp"],
                     n["last_access_timestamp"], n["origin_context"], n["kind"]))  # fmt: skip
        text = f"noted (short-term, {n['kind']}): {n['description']}"
    elif ev.kind == "CRITIQUED":
        cur.execute(f"UPDATE {s}.stm SET confidence_score = %s, last_access_timestamp = %s WHERE tenant = %s AND "
                    "claw_id = %s AND concept_id = %s",
                    (data["confidence_score"], data["last_access_timestamp"], *who, ev.concept_id))  # fmt: skip
        verdict = "withstands" if data["withstands"] else "fails"
        text = f"critic: {verdict} (score {data['confidence_score']}): {data['debate']}"
    elif ev.kind in ("PROMOTED", "FACT_STORED"):
        n = data["node"]
        collection = data.get("collection", "semantic")
        cur.execute(
            f"DELETE FROM {s}.stm WHERE tenant = %s AND claw_id = %s AND concept_id = %s", (*who, ev.concept_id)
        )
        cur.execute(f"INSERT INTO {s}.ltm (tenant, claw_id, concept_id, collection, description, confidence_score, "
                    "origin_context, stored_at, links) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
                    "ON CONFLICT DO NOTHING",
                    (*who, ev.concept_id, collection, n["description"], n["confidence_score"], n["origin_context"],
                     ev.at, json.dumps(data.get("links", []))))  # fmt: skip
        if ev.kind == "FACT_STORED":
            _triples(cur, s, ev, [{**data["triple"], "triple_id": data["triple_id"], "category": data["category"]}])
            text = f"fact (graph + semantic memory): {n['description']}"
        else:
            text = f"promoted to {collection} memory, {len(data.get('links', []))} link(s): {n['description']}"
    elif ev.kind == "DECAYED":
        cur.execute(
            f"DELETE FROM {s}.stm WHERE tenant = %s AND claw_id = %s AND concept_id = %s", (*who, ev.concept_id)
        )
        text = f"forgotten (unconfirmed): {data['node']['description']}"
    elif ev.kind == "SEEDED":
        _triples(cur, s, ev, data["triples"])
        text = f"seeded the knowledge graph with {len(data['triples'])} truth(s)"
    else:
        text = str(data.get("reason", ""))
    if data.get("by", "local") != "local":  # an LLM's deduction or critique, or the local fallback for one
        text = f"{text} [by {data['by']}]"
    cur.execute(f"INSERT INTO {s}.activity (tenant, claw_id, seq, at, kind, concept_id, envelope_event_id, text) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (*who, seq, ev.at, ev.kind, ev.concept_id, ev.envelope_event_id, text[:2000]))  # fmt: skip


def _triples(cur: Cur, s: str, ev: ClamEvent, triples: list[dict[str, Any]]) -> None:
    cur.executemany(f"INSERT INTO {s}.triples (tenant, claw_id, triple_id, subject, predicate, object, category, "
                    "known_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    [(ev.tenant, ev.claw_id, t["triple_id"], t["subject"], t["predicate"], t["object"], t["category"],
                      ev.at) for t in triples])  # fmt: skip
