"""CLAM reads: a claw's mind (counts, short-term buffer, long-term memory, knowledge graph), its stream
of consciousness, and the verdict on one operation. Every read runs in a tenant transaction (RLS)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from governance.clam.triples import Triple
from projections.queries import tenant_tx


class View(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class StmNode(View):
    concept_id: str
    description: str
    confidence_score: int
    creation_timestamp: int
    last_access_timestamp: int
    origin_context: str
    kind: str


class LtmNode(View):
    concept_id: str
    collection: str
    description: str
    confidence_score: int
    origin_context: str
    stored_at: int
    links: list[Any]


class TripleView(View):
    triple_id: str
    subject: str
    predicate: str
    object: str
    category: str


class Counts(View):
    volatile: int  # short-term nodes
    semantic: int
    episodic: int
    triples: int


class MindView(View):
    claw_id: str
    counts: Counts
    stm: list[StmNode]
    ltm: list[LtmNode]
    triples: list[TripleView]


class Activity(View):
    at: int
    kind: str
    concept_id: str
    text: str


async def _rows(conn: AsyncConnection[Any], sql: str, args: Sequence[object]) -> list[dict[str, Any]]:
    cur = conn.cursor(row_factory=dict_row)
    await cur.execute(sql, args)  # type: ignore[arg-type]
    return await cur.fetchall()


async def mind(pool: AsyncConnectionPool, tenant: str, claw_id: str, limit: int = 500) -> MindView:
    who = (tenant, claw_id)
    async with tenant_tx(pool, tenant) as conn:
        stm = await _rows(conn, "SELECT concept_id, description, confidence_score, creation_timestamp, "
                          "last_access_timestamp, origin_context, kind FROM clam.stm WHERE tenant = %s AND "
                          "claw_id = %s ORDER BY creation_timestamp, concept_id LIMIT %s", (*who, limit))  # fmt: skip
        ltm = await _rows(conn, "SELECT concept_id, collection, description, confidence_score, origin_context, "
                          "stored_at, links FROM clam.ltm WHERE tenant = %s AND claw_id = %s ORDER BY stored_at, "
                          "concept_id LIMIT %s", (*who, limit))  # fmt: skip
        triples = await _rows(conn, "SELECT triple_id, subject, predicate, object, category FROM clam.triples "
                              "WHERE tenant = %s AND claw_id = %s ORDER BY category, predicate, object LIMIT %s",
                              (*who, limit))  # fmt: skip
        one = "(SELECT count(*) FROM clam.{} WHERE tenant = %s AND claw_id = %s{}) AS {}"
        counts = await _rows(conn, "SELECT " + ", ".join([
            one.format("stm", "", "volatile"), one.format("ltm", " AND collection = 'semantic'", "semantic"),
            one.format("ltm", " AND collection = 'episodic'", "episodic"), one.format("triples", "", "triples")]),
            who * 4)  # fmt: skip
    return MindView(claw_id=claw_id, counts=Counts.model_validate(counts[0]),
                    stm=[StmNode.model_validate(r) for r in stm], ltm=[LtmNode.model_validate(r) for r in ltm],
                    triples=[TripleView.model_validate(r) for r in triples])  # fmt: skip


async def graph(pool: AsyncConnectionPool, tenant: str, claw_id: str) -> list[Triple]:
    async with tenant_tx(pool, tenant) as conn:
        rows = await _rows(conn, "SELECT subject, predicate, object FROM clam.triples WHERE tenant = %s AND "
                           "claw_id = %s", (tenant, claw_id))  # fmt: skip
    return [Triple(str(r["subject"]), str(r["predicate"]), str(r["object"])) for r in rows]


async def activity(pool: AsyncConnectionPool, tenant: str, claw_id: str, limit: int = 100) -> list[Activity]:
    async with tenant_tx(pool, tenant) as conn:
        rows = await _rows(conn, "SELECT at, kind, concept_id, text FROM clam.activity WHERE tenant = %s AND "
                           "claw_id = %s ORDER BY seq DESC LIMIT %s", (tenant, claw_id, limit))  # fmt: skip
    return [Activity.model_validate(r) for r in rows]


async def op_events(pool: AsyncConnectionPool, tenant: str, event_id: str) -> list[Activity] | None:
    """What one operation did (None while the read model has not folded it yet)."""
    async with tenant_tx(pool, tenant) as conn:
        rows = await _rows(conn, "SELECT at, kind, concept_id, text FROM clam.activity WHERE tenant = %s AND "
                           "envelope_event_id = %s ORDER BY seq", (tenant, event_id))  # fmt: skip
    return [Activity.model_validate(r) for r in rows] or None
