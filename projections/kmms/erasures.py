"""Erasure of a memory as the read model sees it: an erasure request's verdict, and the erasures so far.

An ``erasure`` envelope passes the gate like any write; the kmms processor turns it into ``MEMORY_ERASED``
and the read model deletes the memory's rows and records the erasure (``kmms.kmms_erasures``). A refusal
(by the gate: a suspended claw, a replayed envelope...) is in the audit trail.
"""

from __future__ import annotations

from psycopg_pool import AsyncConnectionPool

from projections.kmms.queries import View
from projections.kmms.search import Memory
from projections.queries import tenant_tx
from projections.verdicts import Refused, poll_verdict, row_or_refusal


class ErasureVerdict(View):
    outcome: str  # ERASED | REFUSED
    erasure_id: str | None = None
    erased_at: int | None = None  # ms since the epoch, as every time in the memory API
    reason_code: str | None = None
    detail: str | None = None


class ErasureRecord(View):
    erasure_id: str
    user_id: str
    reason: str | None
    erased_at: int


async def erasure_verdict(pool: AsyncConnectionPool, tenant: str, event_id: str) -> ErasureVerdict | None:
    found = await row_or_refusal(pool, tenant, event_id, "SELECT erasure_id, erased_at FROM kmms.kmms_erasures "
                                 "WHERE tenant = %s AND envelope_event_id = %s")  # fmt: skip
    if isinstance(found, Refused):
        return ErasureVerdict(outcome="REFUSED", reason_code=found.reason_code, detail=found.detail)
    if found is None:
        return None
    return ErasureVerdict(outcome="ERASED", erasure_id=str(found[0]), erased_at=int(str(found[1])))


async def wait_erasure(pool: AsyncConnectionPool, tenant: str, event_id: str, wait_s: float) -> ErasureVerdict | None:
    return await poll_verdict(erasure_verdict, pool, tenant, event_id, wait_s)


async def erasures(pool: AsyncConnectionPool, m: Memory) -> list[ErasureRecord]:
    """The memory's erasures, oldest first."""
    async with tenant_tx(pool, m.tenant) as conn:
        cur = await conn.execute(
            "SELECT erasure_id, scope, reason, erased_at FROM kmms.kmms_erasures WHERE tenant = %s AND claw_id = %s "
            "AND scope = %s ORDER BY erased_at, log_offset",
            (m.tenant, m.claw_id, m.scope),
        )
        rows = await cur.fetchall()
    return [ErasureRecord(erasure_id=str(a), user_id=str(b), reason=None if c is None else str(c),
                          erased_at=int(str(d))) for a, b, c, d in rows]  # fmt: skip
