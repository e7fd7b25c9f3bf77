"""The HTTP API (FastAPI): health, metrics, the write gateway, claws and audit reads.

No `from __future__ import annotations` here: FastAPI must see the real dependency types.

Every error is JSON ``{"code": ..., "detail": ...}`` with a stable code.
"""

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, generate_latest
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from contracts.topics import TopicNames
from governance.identity import TenantPolicy
from projections.auth import AuthError, Principal, verify_token
from projections.gateway import EnvelopeIn, GatewayError, Publisher, build_envelope
from projections.governance_api import add_governance_routes
from projections.queries import (
    AuditEntry,
    ClawView,
    ConsistencyTimeout,
    audit_by_trace,
    list_claws,
    wait_consistent,
)

MAX_WAIT_MS = 30_000


@dataclass
class ApiDeps:
    app_db_url: str  # the RLS-bound application role
    token_secret: bytes
    tenants: Mapping[str, TenantPolicy]
    names: TopicNames
    publisher: Publisher
    kafka_ok: Callable[[], bool]
    projection_lag: Callable[[], dict[str, int]]
    watermarks: Callable[[list[str]], dict[tuple[str, int], int]]
    projection_topics: Mapping[str, list[str]]  # read model -> topics it folds
    presence_window_ms: int = 30_000  # for the live tally of open proposals


class ApiError(Exception):
    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail


class WriteAccepted(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    consistency_token: str
    topic: str
    partition: int
    offset: int
    event_id: str
    trace_id: str
    idempotency_key: str


def _token(text: str | None) -> tuple[str, int, int] | None:
    if text is None:
        return None
    try:
        topic, partition, offset = text.rsplit(":", 2)
        return topic, int(partition), int(offset)
    except ValueError as exc:
        raise ApiError(422, "INVALID_CONSISTENCY_TOKEN", "expected topic:partition:offset") from exc


def create_app(deps: ApiDeps) -> FastAPI:
    metrics = CollectorRegistry()
    requests = Counter("hivemem_http_requests", "HTTP requests", ["method", "route", "status"], registry=metrics)
    writes = Counter("hivemem_gateway_writes", "Envelopes published by the gateway", ["type"], registry=metrics)
    audit_gauge = Gauge("hivemem_audit_events", "Audited inbound records", ["outcome", "reason_code"],
                        registry=metrics)  # fmt: skip
    lag_gauge = Gauge("hivemem_projection_lag", "Records not yet folded", ["projection"], registry=metrics)
    pool = AsyncConnectionPool(deps.app_db_url, min_size=1, max_size=8, open=False,
                               kwargs={"prepare_threshold": None})  # fmt: skip

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await pool.open(wait=True, timeout=30)
        yield
        await pool.close()

    app = FastAPI(title="HiveMem", version="0.1.0", lifespan=lifespan)

    @app.middleware("http")
    async def count(request: Request, call_next: Callable[[Request], Any]) -> Response:
        response: Response = await call_next(request)
        route = getattr(request.scope.get("route"), "path", "unmatched")
        requests.labels(request.method, route, str(response.status_code)).inc()
        return response

    def error(status: int, code: str, detail: str) -> JSONResponse:
        return JSONResponse({"code": code, "detail": detail}, status_code=status)

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error(exc.status, exc.code, exc.detail)

    @app.exception_handler(GatewayError)
    async def _gateway_error(_: Request, exc: GatewayError) -> JSONResponse:
        return error(exc.status, exc.code, exc.detail)

    @app.exception_handler(AuthError)
    async def _auth_error(_: Request, exc: AuthError) -> JSONResponse:
        return error(401, exc.code, exc.detail)

    @app.exception_handler(ConsistencyTimeout)
    async def _timeout(_: Request, exc: ConsistencyTimeout) -> JSONResponse:
        return error(504, "CONSISTENCY_TIMEOUT", str(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return error(422, "INVALID_REQUEST", f"{where}: {first.get('msg', 'invalid request')}")

    def principal(request: Request) -> Principal:
        return verify_token(deps.token_secret, request.headers.get("authorization"))

    Who = Annotated[Principal, Depends(principal)]

    async def consistent(who: Principal, token: str | None, wait_ms: int, projection: str) -> None:
        parsed = _token(token)
        if parsed is not None:
            topics = deps.projection_topics[projection]

            async def ends() -> dict[tuple[str, int], int]:
                return await run_in_threadpool(deps.watermarks, topics)

            await wait_consistent(pool, who.tenant, parsed, projection, ends, min(wait_ms, MAX_WAIT_MS) / 1000)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz() -> JSONResponse:
        checks: dict[str, Any] = {}
        try:
            async with pool.connection() as conn:
                await conn.execute("SELECT 1")
            checks["postgres"] = "ok"
        except Exception as exc:
            checks["postgres"] = f"error: {type(exc).__name__}"
        checks["kafka"] = "ok" if await run_in_threadpool(deps.kafka_ok) else "unreachable"
        try:
            checks["projection_lag"] = await run_in_threadpool(deps.projection_lag)
        except Exception as exc:
            checks["projection_lag"] = f"error: {type(exc).__name__}"
        ready = checks["postgres"] == "ok" and checks["kafka"] == "ok"
        return JSONResponse({"ready": ready, "checks": checks}, status_code=200 if ready else 503)

    @app.get("/metrics")
    async def metrics_endpoint() -> Response:
        try:
            async with pool.connection() as conn:
                cur = await conn.execute("SELECT outcome, reason_code, n FROM hivemem.audit_counts()")
                for outcome, reason, n in await cur.fetchall():
                    audit_gauge.labels(outcome, reason).set(float(n))  # type: ignore[arg-type]
            for name, lag in (await run_in_threadpool(deps.projection_lag)).items():
                lag_gauge.labels(name).set(lag)
        except Exception:
            pass
        return Response(generate_latest(metrics), media_type=CONTENT_TYPE_LATEST)

    @app.post("/api/v1/envelopes", status_code=202, response_model=WriteAccepted, response_model_by_alias=True)
    async def write(body: EnvelopeIn, who: Who) -> WriteAccepted:
        env = build_envelope(body, who, deps.tenants)
        try:
            pos = await run_in_threadpool(deps.publisher.publish, env)
        except Exception as exc:
            raise ApiError(503, "PUBLISH_FAILED", f"Kafka did not take the write: {exc}") from exc
        writes.labels(env.type).inc()
        return WriteAccepted(consistency_token=f"{pos.topic}:{pos.partition}:{pos.offset}", topic=pos.topic,
                             partition=pos.partition, offset=pos.offset, event_id=env.event_id, trace_id=env.trace_id,
                             idempotency_key=env.idempotency_key)  # fmt: skip

    @app.get("/api/v1/claws", response_model=list[ClawView])
    async def claws(
        who: Who,
        capability: str | None = None,
        consistency: str | None = None,
        wait_ms: Annotated[int, Query(ge=0)] = 5000,
    ) -> list[ClawView]:
        await consistent(who, consistency, wait_ms, "claws")
        return await list_claws(pool, who.tenant, capability)

    @app.get("/api/v1/audit", response_model=list[AuditEntry])
    async def audit(
        who: Who,
        trace_id: Annotated[str, Query(alias="traceId", min_length=1)],
        consistency: str | None = None,
        wait_ms: Annotated[int, Query(ge=0)] = 5000,
    ) -> list[AuditEntry]:
        await consistent(who, consistency, wait_ms, "audit")
        return await audit_by_trace(pool, who.tenant, trace_id)

    add_governance_routes(app, pool, principal, consistent, ApiError, deps.presence_window_ms)
    return app
