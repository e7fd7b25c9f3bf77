"""CLAM over HTTP: ``/clam/v1/*`` (seed 002) — learn from an exchange, run the garbage collector, seed
truths, read the mind (short-term buffer, long-term memory, knowledge graph), the stream of
consciousness, and the knowledge rendered for a system prompt in one of five languages.

Writes are ``clam`` envelopes through the gate and the clam processor; a claw reads and writes its own
mind (the token's claw). No `from __future__ import annotations` here: FastAPI must see the real types.
"""

import asyncio
import time
import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Response
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from governance.clam.renderer import LANGUAGES
from inference.clam.llm import render_with_fallback
from projections.auth import Principal
from projections.clam import queries as q
from projections.gate.gateway import EnvelopeIn, envelope_from_request
from projections.http.context import Ctx
from projections.http.errors import ApiError, error_responses

P = "/clam/v1"
RENDERER_DOC = "auto: the LLM when configured, else local; local: the category layout; llm: the LLM (409 if none)"


class In(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class PerceiveIn(In):
    prompt: str = Field(min_length=1, max_length=32_768)
    response: str = Field(default="", max_length=32_768)


class TruthIn(In):
    subject: str = Field(min_length=1, max_length=256)
    predicate: str = Field(min_length=1, max_length=256)
    object: str = Field(min_length=1, max_length=1024)


class SeedIn(In):
    truths: list[TruthIn] = Field(min_length=1, max_length=256)


class OpOut(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    status: Literal["DONE", "PENDING"]
    event_id: str
    consistency_token: str
    events: list[q.Activity] = Field(default_factory=list)  # what the operation did, in order


class Rendered(BaseModel):
    language: str
    text: str
    renderer: str = Field(description="what wrote the text: local, llm:<model>, or local:fallback (the LLM's "
                          "answers were refused)")  # fmt: skip


def router(ctx: Ctx) -> APIRouter:
    r = APIRouter(tags=["learning loop (CLAM)"])
    Who = Annotated[Principal, Depends(ctx.principal)]
    Wait = Annotated[
        int, Query(alias="waitMs", ge=0, le=30_000, description="how long to wait for the outcome (ms); else 202")
    ]
    errors = error_responses(400, 401, 403, 413, 422, 503)
    write_errors: dict[int | str, dict[str, Any]] = {202: {"description": "published; not folded within waitMs"},
                                                       **errors}  # fmt: skip

    def claw(who: Principal) -> str:
        if who.claw_id is None:
            raise ApiError(422, "MISSING_FIELD", "CLAM is a claw's own memory: use a token bound to a claw")
        return who.claw_id

    async def write(who: Principal, payload: dict[str, object], wait_ms: int, response: Response) -> OpOut:
        claw(who)
        env = envelope_from_request(EnvelopeIn(type="clam", payload=payload), who, ctx.deps.tenants)
        pos = await ctx.publish(env)
        deadline = time.monotonic() + wait_ms / 1000
        while True:
            done = await q.op_events(ctx.pool, who.tenant, env.event_id)
            if done is not None or time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.02)
        if done is None:
            response.status_code = 202
            return OpOut(status="PENDING", event_id=env.event_id, consistency_token=str(pos))
        return OpOut(status="DONE", event_id=env.event_id, consistency_token=str(pos), events=done)

    @r.post(f"{P}/perceive", response_model=OpOut, response_model_by_alias=True, responses=write_errors)
    async def perceive(who: Who, body: PerceiveIn, response: Response, wait_ms: Wait = 5_000) -> OpOut:
        """Learn from one exchange: the critic judges the short-term nodes it addresses, the perceiver's
        deductions go to the buffer (facts straight to the graph and semantic memory), then the garbage
        collector promotes confirmed nodes and forgets stale unconfirmed ones."""
        return await write(who, {"opId": f"op-{uuid.uuid4().hex[:16]}", "op": "PERCEIVE", "prompt": body.prompt,
                                 "response": body.response}, wait_ms, response)  # fmt: skip

    @r.post(f"{P}/gc", response_model=OpOut, response_model_by_alias=True, responses=write_errors)
    async def collect(who: Who, response: Response, wait_ms: Wait = 5_000) -> OpOut:
        """Run the garbage collector now (its clock is this operation's log time)."""
        return await write(who, {"opId": f"op-{uuid.uuid4().hex[:16]}", "op": "TICK"}, wait_ms, response)

    @r.post(f"{P}/seed", response_model=OpOut, response_model_by_alias=True, responses=write_errors)
    async def seed(who: Who, body: SeedIn, response: Response, wait_ms: Wait = 5_000) -> OpOut:
        """Seed truths: applied only when the knowledge graph is empty."""
        truths = [t.model_dump() for t in body.truths]
        return await write(who, {"opId": f"op-{uuid.uuid4().hex[:16]}", "op": "SEED", "truths": truths}, wait_ms,
                           response)  # fmt: skip

    @r.get(f"{P}/mind", response_model=q.MindView, response_model_by_alias=True, responses=errors)
    async def mind(who: Who) -> q.MindView:
        """Counts (volatile, semantic, episodic, triples), the short-term buffer, long-term memory and graph."""
        return await q.mind(ctx.pool, who.tenant, claw(who))

    @r.get(f"{P}/activity", response_model=list[q.Activity], response_model_by_alias=True, responses=errors)
    async def activity(who: Who, limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> list[q.Activity]:
        """The stream of consciousness, newest first: critiques with their debate, promotions, decays, facts."""
        return await q.activity(ctx.pool, who.tenant, claw(who), limit)

    @r.get(f"{P}/knowledge", response_model=Rendered, responses=error_responses(400, 401, 403, 409, 413, 422, 503))
    async def knowledge(
        who: Who,
        language: Annotated[str, Query(max_length=8)] = "en",
        renderer: Annotated[Literal["auto", "local", "llm"], Query(description=RENDERER_DOC)] = "auto",
    ) -> Rendered:
        """The knowledge graph rendered for a system prompt in it / en / de / fr / es: by category (the local
        renderer), or as prose by the LLM when one is configured."""
        if language not in LANGUAGES:
            raise ApiError(422, "UNKNOWN_LANGUAGE", f"language must be one of {', '.join(LANGUAGES)}")
        llm = ctx.deps.clam_llm if renderer != "local" else None
        if renderer == "llm" and llm is None:
            raise ApiError(409, "LLM_NOT_CONFIGURED", "no LLM back-end: set HIVEMEM_LLM_URL (and [clam] use_llm)")
        graph = await q.graph(ctx.pool, who.tenant, claw(who))
        # the LLM client is synchronous (httpx): off the event loop
        text, by = await asyncio.to_thread(render_with_fallback, llm, graph, language)
        return Rendered(language=language, text=text, renderer=by)

    return r
