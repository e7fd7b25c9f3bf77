"""KMMS over HTTP: ``/api/v1/memory/*`` — add episodes, search, ask, read a node's version chain,
list what the L0 index knows. The memory is the token's tenant and claw (and an optional user
inside it); a token without a claw cannot address a memory.

No `from __future__ import annotations` here: FastAPI must see the real dependency types.
"""

import re
import time
import uuid
from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict
from pydantic.alias_generators import to_camel

from contracts.models import MAX_EPISODE, MAX_ID, MAX_LABEL, memory_id
from governance.transcripts import turn_line
from inference.embedding_base import EmbeddingError, TokenStatesEmbedder
from projections.auth import Principal
from projections.gate.gateway import EnvelopeIn, envelope_from_request
from projections.http.context import Ctx
from projections.http.errors import ApiError, error_responses
from projections.http.kmms_messages import Message
from projections.http.limits import Asks, Clean
from projections.kmms import model_switch as switch
from projections.kmms import queries as q
from projections.kmms.answer import answer_text, runner_up_hit
from projections.kmms.erasures import ErasureRecord, erasures, wait_erasure
from projections.kmms.model_switch import ServingModel
from projections.kmms.search import Memory
from projections.kmms.speakers import embedded_question

_STATUS = {"PII_REJECTED": 422, "DUPLICATE_CONTENT": 409, "DUPLICATE_EPISODE": 409, "DUPLICATE": 409,
           "REPLAYED": 409, "CLAW_SUSPENDED": 403, "MEMORY_ERASED": 409}  # fmt: skip
WAIT_DOC = "how long to wait for the verdict (ms, at most 30000); without one in time: 202 PENDING"


class Body(BaseModel):
    # strict: JSON types as declared (a number is not a date), like the other routes.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True)


# Postgres text holds no NUL and no lone surrogate: refused here (422), never a 500 deeper down.
IdStr = Annotated[str, Field(min_length=1, max_length=MAX_ID), Clean]
LabelStr = Annotated[str, Field(max_length=MAX_LABEL), Clean]


def _iso_only(value: object) -> object:
    if not isinstance(value, str):
        raise ValueError("must be an ISO 8601 date-time string")
    return value


# An ISO 8601 string only (strict mode would refuse the string itself, lax mode would take a number).
IsoDateTime = Annotated[datetime, BeforeValidator(_iso_only), Strict(False)]
_DATE_ALONE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _day_known(value: object) -> object:
    """A question's date given as a day alone ("2023-05-20") is the end of that day, UTC: what is known as of a day
    includes what happened on it (an episode's ``occurredAt`` given so is the day's start)."""
    value = _iso_only(value)
    return f"{value}T23:59:59.999Z" if isinstance(value, str) and _DATE_ALONE.fullmatch(value) else value


AsOfDateTime = Annotated[datetime, BeforeValidator(_day_known), Strict(False)]


# Neither a message's length nor their count is bounded on its own: the whole episode is (MAX_EPISODE characters,
# refused 422 INVALID_FIELD in ``add``: one code whether one message, many or a content is too long; the episode
# envelope's MAX_TURNS can never be reached below it); the body is at most 1 MiB. A message is OpenAI's chat
# message (``projections.http.kmms_messages``).


class AddIn(Body):
    messages: list[Message] | None = Field(default=None, description=(
        "a conversation's turns: OpenAI chat messages, each {role, content, name}; content a string or a list of "
        "parts, whose text parts are kept; tool calls, images and audio are not"))  # fmt: skip
    content: Annotated[str, Field(min_length=1), Clean] | None = Field(
        default=None, description="a document, note or tool result (instead of messages)")  # fmt: skip
    content_type: Literal["CONVERSATION", "DOCUMENT", "TOOL_RESULT", "NOTE"] | None = None
    session_id: IdStr | None = None
    user_id: LabelStr = ""
    thread_id: LabelStr = ""
    occurred_at: IsoDateTime | None = Field(default=None, description="when it happened (default: now); ISO 8601")
    episode_id: IdStr | None = None
    idempotency_key: IdStr | None = None


class AddOut(Body):
    status: Literal["STORED", "PENDING"]
    event_id: str
    episode_id: str
    consistency_token: str


class SearchIn(Body):
    query: Annotated[str, Field(min_length=1, max_length=4_096), Clean, Asks]
    k: int = Field(default=5, ge=1, le=50)
    user_id: LabelStr = ""
    thread_id: LabelStr | None = None
    as_of: AsOfDateTime | None = Field(default=None, description="the question's date: nothing after it is returned; "
                                       "a day alone (2023-05-20) is the end of that day, UTC")  # fmt: skip
    mode: Literal["hybrid", "vector", "text"] = "hybrid"


class AskOut(Body):
    answer: str | None  # the hedging prefix and the answering hit's text (projections.kmms.answer); None: abstained
    result: q.SearchResult


class EraseIn(Body):
    user_id: LabelStr = Field(default="", description="whose memory: '' = the claw's own")
    reason: Annotated[str, Field(max_length=1_024), Clean] = Field(
        default="", description="kept with the erasure record: no personal data")  # fmt: skip
    erasure_id: IdStr | None = None
    idempotency_key: IdStr | None = None


class EraseOut(Body):
    status: Literal["ERASED", "PENDING"]
    event_id: str
    erasure_id: str
    erased_at: int | None = None  # ms since the epoch
    consistency_token: str


class IndexedIn(Body):
    episode_ids: list[IdStr] = Field(max_length=1_000)
    user_id: LabelStr = ""


def _ms(dt: datetime | None) -> int | None:
    if dt is None:
        return None
    return int((dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp() * 1000)


def router(ctx: Ctx) -> APIRouter:
    r = APIRouter(tags=["per-claw memory (KMMS)"])
    Who = Annotated[Principal, Depends(ctx.principal)]
    Wait = Annotated[int, Query(alias="waitMs", ge=0, le=30_000, description=WAIT_DOC)]
    deps = ctx.deps
    cfg = deps.search  # the search's settings, read once at the API's start (hivemem/settings.py)
    tau, abstain = cfg.tau, cfg.abstain_below
    old, new = (deps.previous_embedder.model_id, deps.embedder.model_id) if deps.previous_embedder else ("", "")
    serving = ServingModel(deps.embedder, deps.previous_embedder,
                           lambda m: switch.caught_up(ctx.pool, m.tenant, old, new),
                           lambda m: switch.covered(ctx.pool, m, old, new))  # fmt: skip

    def memory(who: Principal, user_id: str, thread_id: str | None = None, where: str = "body") -> Memory:
        """The memory of ``who``'s claw and ``user_id`` (read from ``where``: the request's body or query)."""
        if who.claw_id is None:
            raise ApiError(403, "CLAW_TOKEN_REQUIRED", "a memory belongs to a claw: use a token bound to one")
        if len(memory_id(who.claw_id, user_id)) > MAX_ID:  # the episodes' and erasures' ``about``: no such memory
            room = max(0, MAX_ID - len(memory_id(who.claw_id, "")))
            raise ApiError(422, "INVALID_REQUEST", f"{where}.userId: at most {room} characters with this claw "
                           f"(a memory's id, memory:<claw>/<user>, is at most {MAX_ID})")  # fmt: skip
        return Memory(who.tenant, who.claw_id, user_id, thread_id)

    @r.post("/api/v1/memory/episodes", status_code=201, response_model=AddOut, response_model_by_alias=True,
            responses={202: {"description": "published; not stored within waitMs"},
                       **error_responses(400, 401, 403, 409, 422, 503,
                                         _422="PII_REJECTED (tenant policy reject), INVALID_FIELD",
                                         _409="DUPLICATE_CONTENT (same content in this memory), DUPLICATE_EPISODE, "
                                         "DUPLICATE")})  # fmt: skip
    async def add(who: Who, body: AddIn, response: Response, wait_ms: Wait = 5_000) -> AddOut:
        """Add an episode (L4, verbatim): a conversation's messages, or a document/note/tool result."""
        memory(who, body.user_id)
        if (body.messages is None) == (body.content is None):
            raise ApiError(422, "INVALID_FIELD", "give exactly one of messages or content")
        if body.messages == []:
            raise ApiError(422, "INVALID_FIELD", "messages is empty: give at least one message")
        turns = [t for m in body.messages or [] if (t := m.turn()) is not None]
        if body.messages and not turns:
            raise ApiError(422, "INVALID_FIELD", "no message holds text (tool calls, images and audio are not kept)")
        content = body.content or "\n".join(turn_line(t["role"], t["content"], t["name"]) for t in turns)
        if not (body.content or "".join(t["content"] for t in turns)).strip():
            raise ApiError(422, "INVALID_FIELD", "the episode holds no text, only white space")
        if len(content) > MAX_EPISODE:
            raise ApiError(422, "INVALID_FIELD", f"the episode is longer than {MAX_EPISODE} characters")
        eid = body.episode_id or f"ep-{uuid.uuid4()}"
        kind = body.content_type or ("CONVERSATION" if turns else "NOTE")
        given = _ms(body.occurred_at)  # 1970-01-01T00:00Z is 0, a time like any other: not "none given"
        occurred = given if given is not None else int(time.time() * 1000)
        payload = {"episodeId": eid, "about": memory_id(who.claw_id, body.user_id), "dimensions": {},
                   "content": content, "occurredAt": occurred, "sessionId": body.session_id or eid,
                   "userId": body.user_id, "threadId": body.thread_id, "contentType": kind, "turns": turns}  # fmt: skip
        env = envelope_from_request(EnvelopeIn(type="episode", payload=payload, idempotency_key=body.idempotency_key),
                                    who, deps.tenants)  # fmt: skip
        pos = await ctx.publish(env)
        out = AddOut(status="PENDING", event_id=env.event_id, episode_id=eid, consistency_token=str(pos))
        found = await q.wait_episode(ctx.pool, who.tenant, env.event_id, wait_ms / 1000) if wait_ms else None
        if found is None:
            response.status_code = 202
            return out
        if found.outcome != "STORED":
            code = found.reason_code or "REFUSED"
            raise ApiError(_STATUS.get(code, 422), code, found.detail or f"refused: {code}")
        return out.model_copy(update={"status": "STORED", "episode_id": found.episode_id or eid})

    async def run_search(who: Principal, body: SearchIn) -> q.SearchResult:
        m = memory(who, body.user_id, body.thread_id)
        vector: list[float] | None = None
        tokens = None  # the question's token states, when the model gives them (governance/kmms/late.py)
        embedder = await serving.embedder(m)  # during a model switch, the old one until the new is complete
        model = embedder.model_id if embedder is not None else ""
        degraded = None
        asked = _ms(body.as_of)
        as_of = asked if asked is not None else int(time.time() * 1000)
        question = q.read_question(body.query, as_of)  # its dates parsed once, for the embedding and the search
        if embedder is not None and body.mode != "text":
            # Embedded without the memory's speakers' names, which every turn of theirs carries (speakers.py).
            text = await embedded_question(ctx.pool, m, question.text, cfg.speaker_names)
            try:
                if body.mode == "hybrid" and cfg.late and isinstance(embedder, TokenStatesEmbedder):
                    vector, tokens = await run_in_threadpool(embedder.query_with_tokens, text)
                else:
                    vector = await run_in_threadpool(embedder.embed_query, text)
            except EmbeddingError as exc:
                if body.mode == "vector":  # asked for vectors only: nothing to serve without them
                    detail = f"the query could not be embedded: {exc.code}"
                    raise ApiError(503, "EMBEDDINGS_UNAVAILABLE", detail) from exc
                # Hybrid while the embeddings server is down: an outage the search rides out on full text.
                degraded = f"EMBEDDINGS_UNAVAILABLE: ranked by full text alone ({exc.code})"
        elif body.mode == "vector":
            raise ApiError(503, "EMBEDDINGS_UNAVAILABLE", "no embedding model is configured for this API")
        params = q.SearchParams(body.query, vector, model, body.k, as_of, body.mode, tau, abstain, question, tokens)
        result = await q.search(ctx.pool, m, params, cfg)
        served_by = model if vector is not None else None
        return result.model_copy(update={"embedding_model": served_by, "degraded": degraded})

    @r.post("/api/v1/memory/search", response_model=q.SearchResult, response_model_by_alias=True,
            responses=error_responses(400, 401, 403, 422, 503))  # fmt: skip
    async def search(who: Who, body: SearchIn) -> q.SearchResult:
        """Layered retrieval: temporal intent, L1 -> L4 drill, confidence, hedging and provenance per hit."""
        return await run_search(who, body)

    @r.post("/api/v1/memory/ask", response_model=AskOut, response_model_by_alias=True,
            responses=error_responses(400, 401, 403, 422, 503))  # fmt: skip
    async def ask(who: Who, body: SearchIn) -> AskOut:
        """The answering hit behind its hedging prefix: a fact's value, or an evidence round after the day it was
        said, with the turns or the pieces of its round around it, then the best hit of another session about the
        question too (docs/kmms.md, "What `ask` says"); the whole retrieval as evidence; no answer (and a low
        confidence) when nothing in memory is about the question."""
        res = await run_search(who, body)
        top = res.answering_hit()
        if top is None:
            return AskOut(answer=None, result=res)
        other = runner_up_hit(res, top, abstain)  # an evidence answer's runner-up of another session, if about it
        text = await answer_text(ctx.pool, memory(who, body.user_id, body.thread_id), top, other)
        return AskOut(answer=f"{res.hedging_prefix} {text}" if res.hedging_prefix else text, result=res)

    @r.post("/api/v1/memory/erase", response_model=EraseOut, response_model_by_alias=True,
            responses={202: {"description": "published; not applied within waitMs"},
                       **error_responses(400, 401, 403, 409, 422, 503)})  # fmt: skip
    async def erase(who: Who, body: EraseIn, response: Response, wait_ms: Wait = 5_000) -> EraseOut:
        """Erase a memory (a user's, or the claw's own): every episode, unit, fact, summary, vector and
        index term logged before the request leaves the read models; an episode sent before it and read
        after it is refused MEMORY_ERASED. The log's copy is handled as docs/kmms.md says."""
        memory(who, body.user_id)
        erasure_id = body.erasure_id or f"er-{uuid.uuid4()}"
        payload = {"erasureId": erasure_id, "about": memory_id(who.claw_id, body.user_id),
                   "userId": body.user_id, "reason": body.reason}  # fmt: skip
        env = envelope_from_request(EnvelopeIn(type="erasure", payload=payload, idempotency_key=body.idempotency_key),
                                    who, deps.tenants)  # fmt: skip
        pos = await ctx.publish(env)
        out = EraseOut(status="PENDING", event_id=env.event_id, erasure_id=erasure_id, consistency_token=str(pos))
        found = await wait_erasure(ctx.pool, who.tenant, env.event_id, wait_ms / 1000) if wait_ms else None
        if found is None:
            response.status_code = 202
            return out
        if found.outcome != "ERASED":
            code = found.reason_code or "REFUSED"
            raise ApiError(_STATUS.get(code, 422), code, found.detail or f"refused: {code}")
        return out.model_copy(update={"status": "ERASED", "erased_at": found.erased_at})

    @r.get("/api/v1/memory/erasures", response_model=list[ErasureRecord], response_model_by_alias=True,
           responses=error_responses(400, 401, 403, 422))  # fmt: skip
    async def erasure_list(
        who: Who, user_id: Annotated[str, Query(alias="userId", max_length=MAX_LABEL), Clean] = ""
    ) -> list[ErasureRecord]:
        """The memory's erasures, oldest first (id, reason, when)."""
        return await erasures(ctx.pool, memory(who, user_id, where="query"))

    @r.post("/api/v1/memory/indexed", response_model=list[str], responses=error_responses(400, 401, 403, 422))
    async def indexed(who: Who, body: IndexedIn) -> list[str]:
        """Which of these episodes are searchable yet: stored, and every unit and every node consolidated
        from them so far embedded."""
        m = memory(who, body.user_id)
        embedder = await serving.embedder(m)
        return await q.indexed(ctx.pool, m, body.episode_ids, embedder.model_id if embedder is not None else "")

    @r.get("/api/v1/memory/facts", response_model=list[q.MemoryHit], response_model_by_alias=True,
           responses=error_responses(400, 401, 403, 422))  # fmt: skip
    async def facts(who: Who, user_id: Annotated[str, Query(alias="userId", max_length=MAX_LABEL), Clean] = "",
                    key: Annotated[str | None, Query(max_length=MAX_ID), Clean] = None,
                    entity: Annotated[str | None, Query(max_length=MAX_ID), Clean] = None,
                    include_superseded: Annotated[bool, Query(alias="includeSuperseded")] = False,
                    ) -> list[q.MemoryHit]:  # fmt: skip
        """L2 facts of the memory, each version with its validity window (EVOLUTION: include_superseded)."""
        return await q.facts(ctx.pool, memory(who, user_id, where="query"), key, entity, include_superseded)

    @r.get("/api/v1/memory/entities", response_model=list[q.L0Term], response_model_by_alias=True,
           responses=error_responses(400, 401, 403, 422))  # fmt: skip
    async def entities(
        who: Who, user_id: Annotated[str, Query(alias="userId", max_length=MAX_LABEL), Clean] = ""
    ) -> list[q.L0Term]:
        """The L0 availability index: the entities and topics this memory holds."""
        return await q.l0_terms(ctx.pool, memory(who, user_id, where="query"))

    return r
