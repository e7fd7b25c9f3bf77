"""Waiting for a write's verdict: the one poller the ``?wait`` of every write route runs (an episode, an erasure,
a CAML observation, a KMP ingest), and the gate's or processor's refusal of an envelope as the audit trail holds it.

Each read side says how to find its own verdict (``lookup``: the read model's row for the envelope, else its
refusal); this module only asks again, backing off, until there is one or the wait is over.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, LiteralString, TypeVar

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from projections.queries import tenant_tx

V = TypeVar("V")
Lookup = Callable[[AsyncConnectionPool, str, str], Awaitable[V | None]]


async def poll_verdict(lookup: Lookup[V], pool: AsyncConnectionPool, tenant: str, event_id: str, wait_s: float,
                       first_delay: float = 0.005, max_delay: float = 0.05) -> V | None:  # fmt: skip
    """``lookup``'s verdict on the envelope ``event_id``, asked again (the pause growing by half each time from
    ``first_delay`` up to ``max_delay``) until it has one or ``wait_s`` has passed; None then."""
    deadline = time.monotonic() + wait_s
    delay = first_delay
    while True:
        found = await lookup(pool, tenant, event_id)
        if found is not None or time.monotonic() >= deadline:
            return found
        await asyncio.sleep(delay)
        delay = min(delay * 1.5, max_delay)


@dataclass(frozen=True)
class Refused:
    """The envelope's refusal as the audit trail holds it."""

    reason_code: str
    detail: str


async def row_or_refusal(pool: AsyncConnectionPool, tenant: str, event_id: str,
                         sql: LiteralString) -> tuple[Any, ...] | Refused | None:  # fmt: skip
    """One look for a write's verdict: the read model's row for the envelope (``sql``, taking the tenant and the
    event id), else its refusal in the audit trail, else None (not judged yet)."""
    async with tenant_tx(pool, tenant) as conn:
        row = await (await conn.execute(sql, (tenant, event_id))).fetchone()
        if row is not None:
            return tuple(row)
        rej = await audit_refusal(conn, tenant, event_id)
    return None if rej is None else Refused(str(rej[0]), str(rej[1] or ""))


async def audit_refusal(conn: AsyncConnection[Any], tenant: str, event_id: str) -> tuple[Any, Any] | None:
    """(reason_code, detail) of the envelope's refusal in ``audit.events``, or None when it was not refused."""
    cur = await conn.execute("SELECT reason_code, detail FROM audit.events WHERE tenant = %s AND event_id = %s "
                             "AND outcome = 'REJECTED' LIMIT 1", (tenant, event_id))  # fmt: skip
    row = await cur.fetchone()
    return None if row is None else (row[0], row[1])
