"""Read queries, always inside a transaction bound to one tenant (row-level security)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool, PoolTimeout
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from contracts.positions import LogPosition


class ClawView(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    tenant: str
    claw_id: str
    instance_id: str
    status: str | None
    healthy: bool | None
    agent_version: str | None
    capabilities: list[str]
    first_seen: int
    last_seen: int | None
    active: bool  # heartbeat within its ttl, judged at read time


class AuditEntry(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    source: str  # topic:partition:offset of the inbound record
    outcome: str
    reason_code: str | None
    detail: str | None
    type: str | None
    trace_id: str | None
    claw_id: str | None
    instance_id: str | None
    idempotency_key: str | None
    event_id: str | None
    envelope_ts: int | None
    log_time: int
    output: str  # topic:partition:offset of the verdict (accepted copy or rejection)
    stage: str | None  # gate | governance: which processor accepted or refused it


# The API's pool prepares a statement once it has run this many times on a connection (psycopg's default), so
# Postgres parses it once and may keep a plan for it. A search sends about ten statements, several of them long
# CTEs under row-level security: unprepared, their parse and plan took 10 ms of Postgres per LoCoMo search (plans
# 7.6 ms; execution 11.4 ms); prepared, 3.5 ms. In process on the dev stack (300 LoCoMo questions, three
# alternations), the search's p50 went from 24.3-25.3 ms to 19.5-22.6 ms. Prepared statements live on the
# session: connect directly or through a session-mode pooler (docs/deploy-kubernetes.md), as the processors must.
PREPARE_THRESHOLD = 5


def app_pool(url: str, min_size: int, max_size: int, configure: Any = None) -> AsyncConnectionPool:
    """An unopened pool of the API's kind on ``url``: statements prepared after ``PREPARE_THRESHOLD`` runs."""
    return AsyncConnectionPool(url, min_size=min_size, max_size=max_size, open=False, configure=configure,
                               kwargs={"prepare_threshold": PREPARE_THRESHOLD})  # fmt: skip


class ConsistencyTimeout(Exception):
    pass


class ForeignToken(Exception):
    """The token names a record that was audited for another tenant."""


@asynccontextmanager
async def tenant_tx(pool: AsyncConnectionPool, tenant: str,
                    timeout: float | None = None) -> AsyncIterator[AsyncConnection[tuple[object, ...]]]:  # fmt: skip
    async with pool.connection(timeout=timeout) as conn, conn.transaction():
        # Transaction-local: the setting ends with the transaction, never leaks to the next user.
        await conn.execute("SELECT set_config('hivemem.tenant', %s, true)", (tenant,))
        yield conn


def bind_tenant(conn: psycopg.Connection[Any], tenant: str) -> None:
    """Bind a synchronous connection to ``tenant`` until it is unbound (KSTAR's export, import and sync run on
    one: the CLI's own, or one lent by the API's synchronous pool)."""
    conn.execute("SELECT set_config('hivemem.tenant', %s, false)", (tenant,))
    conn.commit()


def unbind_tenant(conn: psycopg.Connection[Any]) -> None:
    """What the API's synchronous pool runs on a connection handed back: bound to no tenant, RLS shows nothing."""
    conn.execute("RESET hivemem.tenant")
    conn.commit()


A = TypeVar("A")
T = TypeVar("T")
SIDE_WAIT_S = 0.05  # how long work side by side waits for a second connection before it is done in line


async def on_side(pool: AsyncConnectionPool, tenant: str,
                  work: Callable[[AsyncConnection[tuple[object, ...]]], Awaitable[T]]) -> T | None:  # fmt: skip
    """``work`` on a second connection of the pool, in a tenant transaction of its own; None when no connection
    comes within ``SIDE_WAIT_S`` (every one busy): the caller then does the work on its own connection. A
    request holding one connection never waits long for another, so requests cannot wait on each other."""
    try:
        async with tenant_tx(pool, tenant, SIDE_WAIT_S) as conn:
            return await work(conn)
    except PoolTimeout:
        return None


async def side_by_side(conn: AsyncConnection[tuple[object, ...]], pool: AsyncConnectionPool, tenant: str,
                       here: Awaitable[A], there: Callable[[AsyncConnection[tuple[object, ...]]], Awaitable[T]],
                       ) -> tuple[A, T]:  # fmt: skip
    """``here`` (on ``conn``) and ``there`` on a second connection (``on_side``) at the same time; ``there`` after
    ``here`` on ``conn`` when no second connection comes. ``there`` must not return None."""
    first, second = await asyncio.gather(here, on_side(pool, tenant, there))
    return first, second if second is not None else await there(conn)


def capability_matches(wanted: str, announced: list[str]) -> bool:
    """``logs.read`` matches ``logs.read:/var/log/app/*``; a full string matches itself."""
    return any(a == wanted or a.startswith(wanted + ":") for a in announced)


async def list_claws(pool: AsyncConnectionPool, tenant: str, capability: str | None = None) -> list[ClawView]:
    async with tenant_tx(pool, tenant) as conn:
        cur = await conn.execute(
            "SELECT tenant, claw_id, instance_id, status, healthy, agent_version, capabilities, first_seen, "
            "last_seen, ttl_seconds FROM claws.claws ORDER BY claw_id"
        )
        rows: list[Any] = await cur.fetchall()
    now = int(time.time() * 1000)
    out = []
    for r in rows:
        caps = list(r[6] or [])  # type: ignore[call-overload]
        if capability and not capability_matches(capability, caps):
            continue
        last, ttl = r[8], r[9]
        active = bool(last is not None and ttl is not None and r[3] == "ACTIVE" and r[4]
                      and now - int(last) <= int(ttl) * 1000)  # type: ignore[call-overload]  # fmt: skip
        out.append(ClawView(tenant=r[0], claw_id=r[1], instance_id=r[2], status=r[3], healthy=r[4],
                            agent_version=r[5], capabilities=caps, first_seen=r[7], last_seen=last,
                            active=active))  # type: ignore[arg-type]  # fmt: skip
    return out


async def audit_by_trace(pool: AsyncConnectionPool, tenant: str, trace_id: str) -> list[AuditEntry]:
    async with tenant_tx(pool, tenant) as conn:
        cur = await conn.execute(
            "SELECT source_topic || ':' || source_partition || ':' || source_offset, outcome, reason_code, "
            "detail, type, trace_id, claw_id, instance_id, idempotency_key, event_id, envelope_ts, log_time, "
            "output_topic || ':' || output_partition || ':' || output_offset, stage "
            "FROM audit.events WHERE trace_id = %s ORDER BY log_time, source_topic, source_offset",
            (trace_id,),
        )
        rows = await cur.fetchall()
    names = list(AuditEntry.model_fields)
    return [AuditEntry(**dict(zip(names, r, strict=True))) for r in rows]  # type: ignore[arg-type]


async def wait_consistent(
    pool: AsyncConnectionPool, tenant: str, token: LogPosition, consumer: str,
    watermarks: Callable[[], Awaitable[dict[tuple[str, int], int]]], timeout: float,
) -> None:  # fmt: skip
    """Wait until the inbound record ``token`` names, and all before it, are in a read model.

    First the audit row of that record must exist: then the gate has written its verdict,
    and the verdicts of every earlier record of that partition, to Kafka. The end offsets
    of the read model's topics taken after that cover them all; the read model has caught
    up once its stored offsets reach those ends. A record audited for another tenant raises
    ``ForeignToken``: RLS hides that row, so ``hivemem.token_audited`` (SECURITY DEFINER)
    says only whether the row exists and is the transaction's tenant's.
    """
    deadline = time.monotonic() + timeout
    delay = 0.003
    ends: dict[tuple[str, int], int] | None = None
    while True:
        async with tenant_tx(pool, tenant) as conn:
            if ends is None:
                cur = await conn.execute("SELECT hivemem.token_audited(%s, %s, %s)",
                                         (token.topic, token.partition, token.offset))  # fmt: skip
                row = await cur.fetchone()
                mine = row[0] if row else None
                if mine is False:
                    raise ForeignToken(str(token))
                if mine is True:
                    ends = await watermarks()
            if ends is not None:
                cur = await conn.execute(
                    "SELECT topic, partition, next_offset FROM hivemem.projection_offsets WHERE consumer = %s",
                    (consumer,),
                )
                have = {(str(r[0]), int(r[1])): int(r[2]) for r in await cur.fetchall()}  # type: ignore[call-overload]
                if all(have.get(tp, 0) >= end for tp, end in ends.items()):
                    return
        if time.monotonic() >= deadline:
            raise ConsistencyTimeout(f"{consumer} has not reached {token} within {timeout:.1f} s")
        await asyncio.sleep(delay)
        delay = min(delay * 1.5, 0.05)
