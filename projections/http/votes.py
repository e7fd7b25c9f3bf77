"""Reads of the knowledge pool: ``/api/v1/proposals/{id}`` and ``/api/v1/facts/{key}`` (with ``as_of``).

No `from __future__ import annotations` here: FastAPI must see the real dependency types.
"""

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query

from contracts.models import MAX_ID
from projections.auth import Principal
from projections.http.context import Consistency, Ctx, consistency_params
from projections.http.errors import ApiError, error_responses
from projections.http.limits import MAX_INSTANT, Clean
from projections.votes.queries import FactVersion, FactView, ProposalView, fact_as_of, get_fact, get_proposal

MIN_MS, MAX_MS = -(2**63), 2**63 - 1  # log times are Avro longs / Postgres bigints
_NO_PROPOSAL = "No such proposal (PROPOSAL_NOT_FOUND)"
_NO_FACT = "No such fact (FACT_NOT_FOUND), or none valid at as_of (FACT_NOT_VALID_AT)"
_BAD_FACT_READ = "Bad parameter (INVALID_REQUEST, INVALID_AS_OF, INVALID_CONSISTENCY_TOKEN)"
_AS_OF_DOC = "ms since the epoch or ISO-8601 with a zone: answers the version valid then"


def parse_instant(text: str) -> int:
    """Milliseconds since the epoch, or an ISO-8601 instant with a zone (``2026-11-22T04:00:00Z``)."""
    if text.lstrip("-").isdigit():
        ms = int(text)
    else:
        try:
            dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:  # its message quotes the text
            raise ValueError("neither ms since the epoch nor an ISO-8601 instant") from None
        if dt.tzinfo is None:
            raise ValueError("an ISO-8601 instant needs a time zone (e.g. Z)")
        try:
            ms = int(dt.timestamp() * 1000)
        except (OverflowError, OSError) as exc:  # year 1 with a positive offset lies before datetime.min
            raise ValueError("instant out of range") from exc
    if not MIN_MS <= ms <= MAX_MS:
        raise ValueError("instant out of range")
    return ms


def router(ctx: Ctx) -> APIRouter:
    r = APIRouter(tags=["knowledge pool"])
    Who = Annotated[Principal, Depends(ctx.principal)]
    Wait = Annotated[Consistency, Depends(consistency_params)]
    window_ms = ctx.deps.presence_window_ms

    @r.get("/api/v1/proposals/{proposal_id}", response_model=ProposalView, response_model_by_alias=True,
           responses=error_responses(401, 403, 404, 422, 503, 504, _404=_NO_PROPOSAL))  # fmt: skip
    async def proposal(
        who: Who, wait: Wait, proposal_id: Annotated[str, Path(min_length=1, max_length=MAX_ID), Clean]
    ) -> Any:
        """The proposal with its votes (and why any were refused), tally, decision and fact."""
        await ctx.consistent(who, wait, "governance")
        view = await get_proposal(ctx.pool, who.tenant, proposal_id, window_ms)
        if view is None:
            raise ApiError(404, "PROPOSAL_NOT_FOUND", "no proposal with that id in this tenant")
        return view

    @r.get("/api/v1/facts/{fact_key:path}", response_model=FactView | FactVersion, response_model_by_alias=True,
           responses=error_responses(401, 403, 404, 422, 503, 504, _404=_NO_FACT, _422=_BAD_FACT_READ))  # fmt: skip
    async def fact(
        who: Who,
        wait: Wait,
        fact_key: Annotated[str, Path(min_length=1, max_length=MAX_ID), Clean],
        as_of: Annotated[str | None, Query(alias="asOf", max_length=MAX_INSTANT, description=_AS_OF_DOC), Clean] = None,
    ) -> Any:
        """The current version and its history (newest first), or with ``as_of`` the version valid then."""
        await ctx.consistent(who, wait, "governance")
        if as_of is None:
            view = await get_fact(ctx.pool, who.tenant, fact_key)
            if view is None:
                raise ApiError(404, "FACT_NOT_FOUND", "no fact with that key in this tenant")
            return view
        try:
            at = parse_instant(as_of)
        except ValueError as exc:
            raise ApiError(422, "INVALID_AS_OF", f"as_of: {exc}") from exc
        version = await fact_as_of(ctx.pool, who.tenant, fact_key, at)
        if version is None:
            raise ApiError(404, "FACT_NOT_VALID_AT", "no version of that fact was valid at that instant")
        return version

    return r
