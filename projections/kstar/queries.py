"""KSTAR reads (seed 003 §8): records by id, filtered with dotted paths and ranges, full-text
search, perceptions by subject and confidence, facts by schema and JSONPath, skills, token
verification and lineage, statistics, and the changes a sync pulls.

Filters arrive parsed and validated (``governance/kstar/filters.py``); their paths become
``doc #> '{a,b}'`` array parameters and their values jsonb parameters, so no caller text is ever
spliced into SQL. Every read runs in a tenant transaction (row-level security).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from psycopg import sql
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from governance.kstar.filters import Condition
from projections.queries import tenant_tx

MAX_LIMIT = 1000
_OPS = {"eq": "=", "gte": ">=", "lte": "<=", "gt": ">", "lt": "<"}


class View(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class Stored(View):
    kind: str
    record_id: str
    record: dict[str, Any]
    known_at: int
    first_known_at: int
    origin: str


class Verdict(View):
    outcome: str  # STORED | UNCHANGED | CONFLICT | FORGOTTEN | REFUSED
    kind: str | None = None
    record_id: str | None = None
    known_at: int | None = None
    reason_code: str | None = None
    detail: str | None = None


def _where(conds: Sequence[Condition], or_missing: Sequence[str] = ()) -> tuple[list[sql.Composable], list[Any]]:
    """SQL for the conditions; a condition on a field of ``or_missing`` also holds where the field is absent."""
    parts: list[sql.Composable] = []
    params: list[Any] = []
    for c in conds:
        path = list(c.path)
        if c.path[0] in or_missing:
            one, args = _where([c])
            parts.append(sql.SQL("(coalesce(jsonb_typeof(doc #> %s::text[]), 'null') = 'null' OR {})").format(one[0]))
            params += [path, *args]
            continue
        if c.op == "eq":
            parts.append(sql.SQL("doc #> %s::text[] = %s::jsonb"))
            params += [path, json.dumps(c.value)]
        elif c.op in _OPS:  # jsonb orders across types (any number above any string): compare like with like
            parts.append(sql.SQL("jsonb_typeof(doc #> %s::text[]) = jsonb_typeof(%s::jsonb) "
                                 "AND doc #> %s::text[] {} %s::jsonb").format(sql.SQL(_OPS[c.op])))  # fmt: skip
            params += [path, json.dumps(c.value), path, json.dumps(c.value)]
        elif c.op == "in":
            parts.append(sql.SQL("doc #> %s::text[] = ANY(%s::jsonb[])"))
            params += [path, [json.dumps(v) for v in c.value]]
        else:  # contains: the array (or object) at the path holds the value
            parts.append(sql.SQL("doc #> %s::text[] @> %s::jsonb"))
            params += [path, json.dumps(c.value if isinstance(c.value, list | dict) else [c.value])]
    return parts, params


async def query(pool: AsyncConnectionPool, tenant: str, memory: str, kind: str, conds: Sequence[Condition] = (),
                order: tuple[str, bool] | None = None, limit: int = 100, offset: int = 0,
                text: str | None = None, text_fields: Sequence[str] = (),
                or_missing: Sequence[str] = ()) -> list[Stored]:  # fmt: skip
    """Records of one kind of one memory matching every condition, in ``order`` (a top-level field,
    descending when the flag says so) or by record time then id."""
    where, params = _where(conds, or_missing)
    base: list[sql.Composable] = [sql.SQL("tenant = %s AND memory = %s AND kind = %s")]
    args: list[Any] = [tenant, memory, kind]
    if text:
        if text_fields:  # only the named fields (seed §8.1 search_traces(query, fields))
            doc = sql.SQL(" || ' ' || ").join(sql.SQL("coalesce(doc #>> %s::text[], '')") for _ in text_fields)
            base.append(sql.SQL("to_tsvector('english', {}) @@ websearch_to_tsquery('english', %s)").format(doc))
            args += [f.split(".") for f in text_fields] + [text]
        else:
            base.append(sql.SQL("tsv @@ websearch_to_tsquery('english', %s)"))
            args.append(text)
    ordering: sql.Composable
    if order is not None:
        ordering = sql.SQL("doc -> %s {} NULLS LAST, record_id").format(sql.SQL("DESC" if order[1] else "ASC"))
        order_args: list[Any] = [order[0]]
    else:
        ordering, order_args = sql.SQL("record_time, record_id"), []
    stmt = sql.SQL("SELECT kind, record_id, doc, known_at, first_known_at, origin FROM kstar.records WHERE {} "
                   "ORDER BY {} LIMIT %s OFFSET %s").format(sql.SQL(" AND ").join(base + where), ordering)  # fmt: skip
    async with tenant_tx(pool, tenant) as conn:
        rows = await (await conn.execute(stmt, [*args, *params, *order_args, min(limit, MAX_LIMIT), offset])).fetchall()
    return [_stored(r) for r in rows]


def _stored(r: Sequence[Any]) -> Stored:
    return Stored(kind=r[0], record_id=r[1], record=r[2], known_at=r[3], first_known_at=r[4], origin=r[5])


async def get(pool: AsyncConnectionPool, tenant: str, memory: str, kind: str, record_id: str) -> Stored | None:
    async with tenant_tx(pool, tenant) as conn:
        row = await (await conn.execute(
            "SELECT kind, record_id, doc, known_at, first_known_at, origin FROM kstar.records "
            "WHERE tenant = %s AND memory = %s AND kind = %s AND record_id = %s",
            (tenant, memory, kind, record_id))).fetchone()  # fmt: skip
    return None if row is None else _stored(row)


async def get_many(pool: AsyncConnectionPool, tenant: str, memory: str, kind: str,
                   ids: Sequence[str]) -> dict[str, dict[str, Any]]:  # fmt: skip
    async with tenant_tx(pool, tenant) as conn:
        rows = await (await conn.execute(
            "SELECT record_id, doc FROM kstar.records WHERE tenant = %s AND memory = %s AND kind = %s "
            "AND record_id = ANY(%s)", (tenant, memory, kind, list(ids)))).fetchall()  # fmt: skip
    return {str(r[0]): dict(r[1]) for r in rows}  # type: ignore[call-overload]


async def skill_by_name(pool: AsyncConnectionPool, tenant: str, memory: str, name: str) -> Stored | None:
    async with tenant_tx(pool, tenant) as conn:
        row = await (
            await conn.execute(
                "SELECT kind, record_id, doc, known_at, first_known_at, origin FROM kstar.records "
                "WHERE tenant = %s AND memory = %s AND kind = 'skill' AND name = %s",
                (tenant, memory, name),
            )
        ).fetchone()
    return None if row is None else _stored(row)


async def verdict(pool: AsyncConnectionPool, tenant: str, event_id: str) -> Verdict | None:
    """The verdict on one operation: its history row, or the refusal the audit holds."""
    async with tenant_tx(pool, tenant) as conn:
        row = await (await conn.execute(
            "SELECT change, kind, record_id, known_at FROM kstar.history WHERE tenant = %s AND envelope_event_id = %s",
            (tenant, event_id))).fetchone()  # fmt: skip
        if row is not None:
            return Verdict(outcome=str(row[0]), kind=str(row[1]), record_id=str(row[2]), known_at=int(str(row[3])))
        rej = await (await conn.execute(
            "SELECT reason_code, detail FROM audit.events WHERE tenant = %s AND event_id = %s AND outcome = 'REJECTED' "
            "LIMIT 1", (tenant, event_id))).fetchone()  # fmt: skip
    return None if rej is None else Verdict(outcome="REFUSED", reason_code=str(rej[0]), detail=str(rej[1]))


async def stats(pool: AsyncConnectionPool, tenant: str, memory: str) -> dict[str, Any]:
    async with tenant_tx(pool, tenant) as conn:
        rows = await (await conn.execute(
            "SELECT kind, count(*), min(nullif(record_time, '')), max(nullif(record_time, '')) FROM kstar.records "
            "WHERE tenant = %s AND memory = %s GROUP BY kind ORDER BY kind", (tenant, memory))).fetchall()  # fmt: skip
        last = await (await conn.execute("SELECT max(known_at) FROM kstar.history WHERE tenant = %s AND memory = %s",
                                         (tenant, memory))).fetchone()  # fmt: skip
    counts = {str(r[0]): int(str(r[1])) for r in rows}
    traces = next((r for r in rows if r[0] == "trace"), None)
    return {"memory": memory, "counts": counts,
            "dateRange": {"earliest": traces[2] if traces else None, "latest": traces[3] if traces else None},
            "lastChangeAt": last[0] if last else None}  # fmt: skip


async def changes(pool: AsyncConnectionPool, tenant: str, memory: str, since: int, kinds: Sequence[str],
                  limit: int = 1000) -> list[Stored]:  # fmt: skip
    """Records of ``kinds`` whose last change HiveMem learnt after ``since`` (log time), oldest first."""
    async with tenant_tx(pool, tenant) as conn:
        rows = await (await conn.execute(
            "SELECT kind, record_id, doc, known_at, first_known_at, origin FROM kstar.records WHERE tenant = %s "
            "AND memory = %s AND known_at > %s AND kind = ANY(%s) ORDER BY known_at, kind, record_id LIMIT %s",
            (tenant, memory, since, list(kinds), min(limit, MAX_LIMIT)))).fetchall()  # fmt: skip
    return [_stored(r) for r in rows]
