"""CAML over HTTP: ``/caml/v1/observe``, ``/recall``, ``/validate``, ``/operators/*``, ``/transparency/*``.

Observe and validate publish a signed envelope (the gateway signs with the token's claw's
deployment key) and wait for the processors' verdict, so the answer is the verdict: 201, or
the refusal's status and reason code (422 PII_REJECTED carries no detail of the content).
No `from __future__ import annotations` here: FastAPI must see the real dependency types.
"""

import hashlib
import json
import math
import time
import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from contracts.caml_records import CamlAuditEntry, CamlEvent
from contracts.models import MAX_ID, MAX_TEXT, Domain, ObservationType
from governance.caml.rate_limit import tier_limit
from governance.caml.taxonomy import canonical_kind
from inference.embedding_base import EmbeddingError
from projections.auth import Principal
from projections.caml import queries as q
from projections.gate.gateway import EnvelopeIn, envelope_from_request
from projections.http.context import Ctx
from projections.http.errors import ApiError, error_responses
from projections.http.limits import Asks, Clean

# Refusal code -> HTTP status; the detail is a fixed sentence per code, never the content.
_STATUS = {
    "PII_REJECTED": 422, "INSUFFICIENT_EVIDENCE": 422, "INVALID_PATTERN": 422, "SYSTEM_ONLY_TYPE": 422,
    "REPUTATION_TOO_LOW": 403, "CLAW_SUSPENDED": 403, "SELF_VALIDATION": 403,
    "RATE_LIMITED": 429, "UNKNOWN_OBSERVATION": 404,
    "DUPLICATE_OBSERVATION": 409, "DUPLICATE_VALIDATION": 409, "DUPLICATE": 409, "REPLAYED": 409,
    "OBSERVATION_INACTIVE": 409,
}  # fmt: skip
_DETAIL = {
    "PII_REJECTED": "the content was refused for personal data; nothing was stored",
    "RATE_LIMITED": "the operator's write limit for its tier is reached",
}
WAIT_DOC = "how long to wait for the verdict (ms, at most 30000); without one in time: 202 PENDING"


class Body(BaseModel):
    # strict: JSON types as declared (false is not 0), like the envelope gateway.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True)


class Published(Body):
    """An operator action published to the log; its effect follows when the caml service folds it."""

    status: Literal["PUBLISHED"] = "PUBLISHED"
    event_id: str


class ObserveIn(Body):
    observation_id: str | None = Field(default=None, min_length=1, max_length=MAX_ID)
    type: ObservationType = Field(description="ANOMALY_DETECTED, DOMAIN_SIGNAL, WORKFLOW_PATTERN, EFFICIENCY_DELTA, "
                                  "REGULATORY_SHIFT (short v1 names accepted)")  # fmt: skip
    domain: Domain
    summary: str = Field(min_length=1, max_length=MAX_TEXT)
    pattern: dict[str, Any] = Field(default_factory=dict, description="the kind's typed pattern (docs/caml.md)")
    evidence: list[Annotated[str, Field(min_length=1, max_length=MAX_ID)]] = Field(default_factory=list,
                                                                                    max_length=64)  # fmt: skip
    confidence: float = Field(default=0.5, ge=0.0, le=1.0, allow_inf_nan=False)
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=MAX_ID)
    trace_id: str | None = Field(default=None, min_length=1, max_length=MAX_ID)


class ValidateIn(Body):
    observation_id: str = Field(min_length=1, max_length=MAX_ID)
    outcome: Literal["CONFIRMED", "REFUTED", "INCONCLUSIVE"]
    note: str | None = Field(default=None, max_length=MAX_TEXT)
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=MAX_ID)
    trace_id: str | None = Field(default=None, min_length=1, max_length=MAX_ID)


class RecallIn(Body):
    query: Annotated[str, Field(min_length=1, max_length=4_096), Asks]
    k: int = Field(default=5, ge=1, le=50)
    domain: Domain | None = None
    types: list[ObservationType] | None = Field(default=None, max_length=12)
    min_score: float = Field(default=0.0, ge=0.0, le=1.0, description="drop results below this composite score")


class WriteResult(Body):
    status: Literal["ACCEPTED", "PENDING"]
    event_id: str
    observation_id: str
    consistency_token: str
    reputation_at_write: float | None = None
    audit_entry_id: str | None = None  # give it to /caml/v1/transparency/proof/{entry_id}


class RecallOut(Body):
    model: str
    results: list[q.RecallHit]
    latency_ms: float


class OperatorView(Body):
    operator: str
    tier: str
    writes_per_hour: int
    writes_last_hour: int
    deployments: list[q.DeploymentView]


def _refused(v: q.Verdict) -> ApiError:
    code = v.reason_code or "REFUSED"
    headers = None
    if code == "RATE_LIMITED" and v.retry_after_ms is not None:
        headers = {"Retry-After": str(max(1, math.ceil(v.retry_after_ms / 1000)))}
    detail = _DETAIL.get(code, f"refused by the {v.stage}: {code}")
    return ApiError(_STATUS.get(code, 422), code, detail, headers)


def router(ctx: Ctx) -> APIRouter:
    r = APIRouter(tags=["collective memory (CAML)"])
    Who = Annotated[Principal, Depends(ctx.principal)]
    Wait = Annotated[int, Query(alias="waitMs", ge=0, le=30_000, description=WAIT_DOC)]
    deps = ctx.deps

    async def write(who: Principal, kind: str, payload: dict[str, Any], body: ObserveIn | ValidateIn, wait_ms: int,
                    response: Response, observation_id: str) -> WriteResult:  # fmt: skip
        if who.claw_id is None:
            raise ApiError(403, "CLAW_TOKEN_REQUIRED", "observe and validate need a token bound to a deployment (claw)")
        env = envelope_from_request(EnvelopeIn(type=kind, payload=payload, idempotency_key=body.idempotency_key,
                                               trace_id=body.trace_id), who, deps.tenants)  # fmt: skip
        pos = await ctx.publish(env)
        found = await q.wait_verdict(ctx.pool, who.tenant, env.event_id, wait_ms / 1000)
        result = WriteResult(status="PENDING", event_id=env.event_id, observation_id=observation_id,
                             consistency_token=str(pos))  # fmt: skip
        if found is None:
            response.status_code = 202
            return result
        if found.outcome != "ACCEPTED":
            raise _refused(found)
        response.status_code = 201
        return result.model_copy(
            update={
                "status": "ACCEPTED",
                "reputation_at_write": found.reputation_at_write,
                "audit_entry_id": found.audit_entry_id,
            }
        )

    _write_errors = error_responses(
        *(400, 401, 403, 404, 409, 422, 429, 503),
        _422="Refused (PII_REJECTED, INSUFFICIENT_EVIDENCE, INVALID_PATTERN, SYSTEM_ONLY_TYPE, INVALID_FIELD, ...): "
        "never any detail of the content",
        _403="REPUTATION_TOO_LOW, CLAW_SUSPENDED, SELF_VALIDATION, CLAW_TOKEN_REQUIRED",
        _404="UNKNOWN_OBSERVATION",
        _409="DUPLICATE_OBSERVATION, DUPLICATE_VALIDATION, DUPLICATE, REPLAYED, OBSERVATION_INACTIVE",
    )

    @r.post("/caml/v1/observe", status_code=201, response_model=WriteResult, response_model_by_alias=True,
            responses={202: {"description": "published; no verdict within waitMs"}, **_write_errors})  # fmt: skip
    async def observe(who: Who, body: ObserveIn, response: Response, wait_ms: Wait = 5_000) -> WriteResult:
        """Share an observation with the collective pool (PII-gated, reputation-gated, rate-limited)."""
        oid = body.observation_id or f"obs-{uuid.uuid4()}"
        payload = {"observationId": oid, "observationType": body.type, "domain": body.domain,
                   "summary": body.summary, "pattern": json.dumps(body.pattern, sort_keys=True),
                   "evidence": body.evidence, "confidence": body.confidence}  # fmt: skip
        return await write(who, "observation", payload, body, wait_ms, response, oid)

    @r.post("/caml/v1/validate", status_code=201, response_model=WriteResult, response_model_by_alias=True,
            responses={202: {"description": "published; no verdict within waitMs"}, **_write_errors})  # fmt: skip
    async def validate(who: Who, body: ValidateIn, response: Response, wait_ms: Wait = 5_000) -> WriteResult:
        """Report what happened when acting on a recalled observation (CONFIRMED, REFUTED, INCONCLUSIVE)."""
        payload = {"observationId": body.observation_id, "verdict": body.outcome, "note": body.note}
        return await write(who, "validation", payload, body, wait_ms, response, body.observation_id)

    @r.post("/caml/v1/recall", response_model=RecallOut, response_model_by_alias=True,
            responses=error_responses(400, 401, 403, 422, 503))  # fmt: skip
    async def recall(who: Who, body: RecallIn) -> RecallOut:
        """Observations of every operator, ranked by seed 000 eq. (1):
        0.45·sim + 0.25·log(1+r)/log(101) + 0.20·v/(v+f+1) + 0.10·e^(−d/60)."""
        if deps.embedder is None:
            raise ApiError(503, "EMBEDDINGS_UNAVAILABLE", "no embedding model is configured for this API")
        started = time.perf_counter()
        try:
            vector = await run_in_threadpool(deps.embedder.embed_query, body.query)
        except EmbeddingError as exc:  # a remote embeddings server down or misconfigured
            raise ApiError(503, "EMBEDDINGS_UNAVAILABLE", f"the query could not be embedded: {exc.code}") from exc
        kinds: list[str] | None = None
        if body.types:
            kinds = sorted({canonical_kind(t) for t in body.types})
        hits = await q.recall(ctx.pool, who.tenant, vector, deps.embedder.model_id, k=body.k, domain=body.domain,
                              kinds=kinds, min_score=body.min_score, candidates=max(50, 4 * body.k),
                              pseudonym_key=deps.token_secret)  # fmt: skip
        latency = round((time.perf_counter() - started) * 1000, 3)
        if deps.caml_audit is not None:  # C-42: every CAML operation is audited, recalls too
            now = int(time.time() * 1000)
            request = hashlib.sha256(body.model_dump_json().encode()).hexdigest()
            deps.caml_audit(CamlAuditEntry(
                entry_id=str(uuid.uuid4()), tenant=who.tenant, claw_id=who.claw_id or "-", operation="RECALL",
                outcome="SERVED", request_sha256=request, result_count=len(hits), latency_ms=latency, at=now,
                domain=body.domain))  # fmt: skip
        return RecallOut(model=deps.embedder.model_id, results=hits, latency_ms=latency)

    @r.get("/caml/v1/operators/me", response_model=OperatorView, response_model_by_alias=True,
           responses=error_responses(401, 403, 503))  # fmt: skip
    async def operator(who: Who) -> OperatorView:
        """The operator (tenant): its tier and write quota, and its deployments' reputation and status."""
        tier = deps.tenants[who.tenant].caml_tier
        used = await q.writes_last_hour(ctx.pool, who.tenant, int(time.time() * 1000))
        return OperatorView(operator=who.tenant, tier=tier, writes_per_hour=tier_limit(tier), writes_last_hour=used,
                            deployments=await q.deployments(ctx.pool, who.tenant))  # fmt: skip

    Claw = Annotated[str, Path(min_length=1, max_length=MAX_ID), Clean]

    @r.get("/caml/v1/operators/me/deployments/{claw_id}/reputation", response_model=list[q.RepEvent],
           response_model_by_alias=True, responses=error_responses(401, 403, 422, 503))  # fmt: skip
    async def reputation(who: Who, claw_id: Claw,
                         limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> list[q.RepEvent]:  # fmt: skip
        """A deployment's reputation history, newest first (every Table 6 event with its reason)."""
        return await q.reputation_history(ctx.pool, who.tenant, claw_id, limit)

    @r.post("/caml/v1/operators/me/deployments/{claw_id}/reinstate", status_code=202, response_model=Published,
            response_model_by_alias=True, responses=error_responses(401, 403, 422, 503))  # fmt: skip
    async def reinstate(who: Who, claw_id: Claw) -> Published:
        """Lift a deployment's suspension (an operator action: needs a token not bound to a claw)."""
        if who.claw_id is not None:
            raise ApiError(403, "OPERATOR_TOKEN_REQUIRED", "reinstating needs an operator token (no claw)")
        if deps.caml_status is None:
            raise ApiError(503, "KAFKA_UNAVAILABLE", "no status publisher configured")
        now = int(time.time() * 1000)
        event_id = str(uuid.uuid4())
        try:
            await run_in_threadpool(deps.caml_status, CamlEvent(
            event_id=event_id, kind="DEPLOYMENT_REINSTATED", tenant=who.tenant, claw_id=claw_id, at=now,
            source=f"api:{who.subject}", trace_id=event_id, reason=f"reinstated by {who.subject}"))  # fmt: skip
        except Exception as exc:
            raise ApiError(503, "PUBLISH_FAILED", f"Kafka did not take the reinstatement: {exc}") from exc
        if deps.caml_audit is not None:
            deps.caml_audit(CamlAuditEntry(
                entry_id=event_id, tenant=who.tenant, claw_id=claw_id, operation="OPERATOR", outcome="ACCEPTED",
                reason_code="REINSTATED", request_sha256=hashlib.sha256(event_id.encode()).hexdigest(),
                event_id=event_id, latency_ms=0.0, at=now))  # fmt: skip
        return Published(event_id=event_id)

    @r.get("/caml/v1/transparency/roots", response_model=list[q.RootView], response_model_by_alias=True,
           responses=error_responses(401, 403, 422, 503))  # fmt: skip
    async def roots(who: Who, day: Annotated[str | None, Query(pattern=r"^\d{4}-\d{2}-\d{2}$")] = None) -> Any:
        """Daily Merkle roots over the operator's audit entries (and the global roots over all operators)."""
        if day is not None:
            try:
                datetime.strptime(day, "%Y-%m-%d")
            except ValueError as exc:
                raise ApiError(422, "INVALID_DAY", "day must be a calendar date, YYYY-MM-DD") from exc
        return await q.roots(ctx.pool, who.tenant, day)

    @r.get("/caml/v1/transparency/proof/{entry_id}", response_model=q.ProofView, response_model_by_alias=True,
           responses=error_responses(401, 403, 404, 422, 503))  # fmt: skip
    async def proof(who: Who, entry_id: Claw) -> q.ProofView:
        """An inclusion proof (RFC 6962) of one audit entry against its day's root."""
        found = await q.proof(ctx.pool, who.tenant, entry_id)
        if found is None:
            raise ApiError(404, "NO_PROOF", "no such audit entry, or its day has no root yet")
        return found

    return r
