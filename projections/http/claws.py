"""Reads of the claws and audit read models: ``/api/v1/claws``, ``/api/v1/claws/{id}/keys``,
``/api/v1/audit``.

No `from __future__ import annotations` here: FastAPI must see the real dependency types.
"""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from contracts.models import MAX_ID, MAX_LABEL
from projections.auth import Principal
from projections.http.context import Consistency, Ctx, consistency_params
from projections.http.errors import error_responses
from projections.http.limits import Clean
from projections.queries import AuditEntry, ClawView, audit_by_trace, list_claws, tenant_tx

READ_ERRORS = error_responses(401, 403, 422, 503, 504)


class KeyView(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    key_id: str
    public_key_hex: str | None
    replaces: str | None
    registered_at: int | None
    revoked_at: int | None


def router(ctx: Ctx) -> APIRouter:
    r = APIRouter(tags=["claws and audit"], responses=READ_ERRORS)
    Who = Annotated[Principal, Depends(ctx.principal)]
    Wait = Annotated[Consistency, Depends(consistency_params)]

    @r.get("/api/v1/claws", response_model=list[ClawView])
    async def claws(
        who: Who,
        wait: Wait,
        capability: Annotated[str | None, Query(max_length=MAX_LABEL), Clean] = None,
    ) -> list[ClawView]:
        """Claws of the token's tenant; ``capability=logs.read`` matches ``logs.read:/var/log/*`` too."""
        await ctx.consistent(who, wait, "claws")
        return await list_claws(ctx.pool, who.tenant, capability)

    @r.get("/api/v1/claws/{claw_id}/keys", response_model=list[KeyView])
    async def keys(
        who: Who, wait: Wait, claw_id: Annotated[str, Path(min_length=1, max_length=MAX_ID), Clean]
    ) -> list[KeyView]:
        """The claw's registered Ed25519 keys (rotations via ``replaces``, revocations)."""
        await ctx.consistent(who, wait, "claws")
        async with tenant_tx(ctx.pool, who.tenant) as conn:
            cur = await conn.execute("SELECT key_id, encode(public_key, 'hex'), replaces, registered_at, revoked_at "
                                     "FROM claws.keys WHERE claw_id = %s ORDER BY registered_at NULLS LAST, key_id",
                                     (claw_id,))  # fmt: skip
            rows: list[Any] = await cur.fetchall()
        return [KeyView(key_id=r[0], public_key_hex=r[1], replaces=r[2], registered_at=r[3], revoked_at=r[4])
                for r in rows]  # fmt: skip

    @r.get("/api/v1/audit", response_model=list[AuditEntry])
    async def audit(
        who: Who,
        wait: Wait,
        trace_id: Annotated[str, Query(alias="traceId", min_length=1, max_length=MAX_ID), Clean],
    ) -> list[AuditEntry]:
        """Every inbound record of the trace with its verdict (gate or governance), oldest first."""
        await ctx.consistent(who, wait, "audit")
        return await audit_by_trace(ctx.pool, who.tenant, trace_id)

    return r
