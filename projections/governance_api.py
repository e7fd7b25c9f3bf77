"""HTTP routes of the knowledge pool: proposals, facts (with ``as_of``) and claw keys.

No `from __future__ import annotations` here: FastAPI must see the real dependency types.
"""

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

from projections.auth import Principal
from projections.governance_queries import FactVersion, FactView, ProposalView, fact_as_of, get_fact, get_proposal
from projections.queries import tenant_tx

Consistent = Callable[[Principal, str | None, int, str], Awaitable[None]]
NotFound = Callable[[int, str, str], Exception]


class KeyView(BaseModel):
    key_id: str
    public_key_hex: str | None
    replaces: str | None
    registered_at: int | None
    revoked_at: int | None


def parse_instant(text: str) -> int:
    """Milliseconds since the epoch, or an ISO-8601 instant with a zone (``2026-11-22T04:00:00Z``)."""
    if text.lstrip("-").isdigit():
        return int(text)
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        raise ValueError("an ISO-8601 instant needs a time zone (e.g. Z)")
    return int(dt.timestamp() * 1000)


def add_governance_routes(app: FastAPI, pool: AsyncConnectionPool, principal: Callable[..., Principal],
                          consistent: Consistent, error: NotFound, window_ms: int) -> None:  # fmt: skip
    Who = Annotated[Principal, Depends(principal)]
    Wait = Annotated[int, Query(ge=0)]

    @app.get("/api/v1/proposals/{proposal_id}", response_model=ProposalView, response_model_by_alias=True)
    async def proposal(proposal_id: str, who: Who, consistency: str | None = None, wait_ms: Wait = 5000) -> Any:
        await consistent(who, consistency, wait_ms, "governance")
        view = await get_proposal(pool, who.tenant, proposal_id, window_ms)
        if view is None:
            raise error(404, "PROPOSAL_NOT_FOUND", f"no proposal {proposal_id!r} in tenant {who.tenant}")
        return view

    @app.get("/api/v1/facts/{fact_key:path}", response_model=FactView | FactVersion, response_model_by_alias=True)
    async def fact(
        fact_key: str, who: Who, as_of: str | None = None, consistency: str | None = None, wait_ms: Wait = 5000
    ) -> Any:
        await consistent(who, consistency, wait_ms, "governance")
        if as_of is None:
            view = await get_fact(pool, who.tenant, fact_key)
            if view is None:
                raise error(404, "FACT_NOT_FOUND", f"no fact {fact_key!r} in tenant {who.tenant}")
            return view
        try:
            at = parse_instant(as_of)
        except ValueError as exc:
            raise error(422, "INVALID_AS_OF", f"as_of: {exc}") from exc
        version = await fact_as_of(pool, who.tenant, fact_key, at)
        if version is None:
            raise error(404, "FACT_NOT_VALID_AT", f"no version of {fact_key!r} was valid at {at}")
        return version

    @app.get("/api/v1/claws/{claw_id}/keys", response_model=list[KeyView])
    async def keys(claw_id: str, who: Who, consistency: str | None = None, wait_ms: Wait = 5000) -> Any:
        await consistent(who, consistency, wait_ms, "claws")
        async with tenant_tx(pool, who.tenant) as conn:
            cur = await conn.execute("SELECT key_id, encode(public_key, 'hex'), replaces, registered_at, revoked_at "
                                     "FROM claws.keys WHERE claw_id = %s ORDER BY registered_at NULLS LAST, key_id",
                                     (claw_id,))  # fmt: skip
            rows: list[Any] = await cur.fetchall()
        return [KeyView(key_id=r[0], public_key_hex=r[1], replaces=r[2], registered_at=r[3], revoked_at=r[4])
                for r in rows]  # fmt: skip
