"""What every router shares: the dependencies the process wires in (``ApiDeps``), the
connection pool, the bearer-token check and the consistency wait.

No `from __future__ import annotations` here: FastAPI must see the real dependency types.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol

from fastapi import Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CollectorRegistry, Counter
from psycopg_pool import ConnectionPool
from pydantic import BaseModel

from contracts.caml_records import CamlAuditEntry, CamlEvent
from contracts.models import Envelope
from contracts.positions import LogPosition, PositionError
from contracts.topics import TopicNames
from governance.identity import TenantPolicy
from governance.kmms.search_config import DEFAULT, SearchConfig
from projections.auth import Principal, verify_token
from projections.http.errors import ApiError
from projections.http.limits import MAX_TOKEN, Clean
from projections.queries import ConsistencyTimeout, ForeignToken, app_pool, unbind_tenant, wait_consistent
from projections.vectors import hnsw_session

MAX_WAIT_MS = 30_000
# The processors /readyz expects to be running (hivemem.processor_progress.processor).
DEFAULT_PROCESSORS = ("gate", "governance-processor", "claws", "audit", "governance")


class Publisher(Protocol):
    def publish(self, env: Envelope, timeout: float = ...) -> LogPosition:
        """Publish and wait for the broker's ack; say where the record landed."""
        ...


@dataclass
class ApiDeps:
    app_db_url: str  # the RLS-bound application role
    token_secret: bytes
    tenants: Mapping[str, TenantPolicy]
    names: TopicNames
    publisher: Publisher
    kafka_ok: Callable[[], bool]
    projection_lag: Callable[[], dict[str, int]]
    watermarks: Callable[[list[str]], dict[tuple[str, int], int]]  # end offset per (topic, partition)
    projection_topics: Mapping[str, list[str]]  # read model -> topics it folds
    presence_window_ms: int = 30_000  # for the live tally of open proposals
    processors: list[str] = field(default_factory=lambda: list(DEFAULT_PROCESSORS))
    ready_stale_s: float = 15.0  # a processor whose heartbeat is older is not ready
    ready_max_lag: int = 10_000  # one further behind its inputs is flagged `behind` (reported; still ready)
    embedder: Any = None  # inference.embeddings.Embedder for recall queries (None: recall answers 503)
    previous_embedder: Any = None  # during a KMMS model switch, the model switched away from (kmms/model_switch.py)
    caml_audit: Callable[[CamlAuditEntry], None] | None = None  # appends to hivemem.caml.audit
    caml_status: Callable[[CamlEvent], None] | None = None  # publishes to hivemem.caml.status (acked)
    clam_llm: Any = None  # inference.clam.llm.ClamLlm for /clam/v1/knowledge?renderer=llm (None: local only)
    search: SearchConfig = DEFAULT  # the KMMS search's settings (hivemem/settings.py: search_config_from_env)


class Consistency(BaseModel):
    token: str | None
    wait_ms: int


# One answer for every token that cannot be waited for: garbage, a topic claws do not write,
# a partition or offset that does not exist, and a real write of another tenant alike.
BAD_TOKEN = "consistency must be the topic:partition:offset a write of this tenant returned"

_bearer = HTTPBearer(auto_error=False, description="a token from `hivemem token --tenant T [--claw C]`")


_TOKEN_DOC = "the consistencyToken (topic:partition:offset) a write of this tenant returned"
# Documented, not enforced by FastAPI: a token that does not match is INVALID_CONSISTENCY_TOKEN.
_TOKEN_PATTERN: dict[str, Any] = {"pattern": r"^[A-Za-z0-9._-]{1,249}:[0-9]{1,6}:[0-9]{1,19}$"}
_WAIT_DOC = f"how long to wait for the read model to reach it (capped at {MAX_WAIT_MS})"


def consistency_params(
    consistency: Annotated[
        str | None, Query(max_length=MAX_TOKEN, description=_TOKEN_DOC, json_schema_extra=_TOKEN_PATTERN), Clean
    ] = None,
    wait_ms: Annotated[int, Query(alias="waitMs", ge=0, description=_WAIT_DOC)] = 5000,
) -> Consistency:
    return Consistency(token=consistency, wait_ms=wait_ms)


class Ctx:
    """Built once per app; routers close over it."""

    def __init__(self, deps: ApiDeps) -> None:
        self.deps = deps
        self.pool = app_pool(deps.app_db_url, min_size=1, max_size=8, configure=hnsw_session)
        # KSTAR's export, import and sync are one synchronous library with the CLI (projections.kstar.io):
        # the routes run it in a worker thread on these, each bound to the caller's tenant while it is lent.
        self.sync_pool = ConnectionPool(deps.app_db_url, min_size=0, max_size=2, open=False, reset=unbind_tenant)
        self._gate_inputs = frozenset(deps.names.gate_inputs())
        self.metrics = CollectorRegistry()
        self.requests = Counter("hivemem_http_requests", "HTTP requests", ["method", "route", "status"],
                                registry=self.metrics)  # fmt: skip
        self.writes = Counter("hivemem_gateway_writes", "Envelopes published by the gateway", ["type"],
                              registry=self.metrics)  # fmt: skip

        def principal(
            request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
        ) -> Principal:
            # HTTPBearer is there for OpenAPI's security scheme; our own check gives the codes.
            who = verify_token(deps.token_secret, request.headers.get("authorization"))
            if who.tenant not in deps.tenants:
                raise ApiError(403, "UNKNOWN_TENANT", "the token's tenant is not configured")
            return who

        self.principal = principal

    async def publish(self, env: Envelope) -> LogPosition:
        """Publish and wait for Kafka's ack; 503 PUBLISH_FAILED when it does not take the write."""
        try:
            pos = await run_in_threadpool(self.deps.publisher.publish, env)
        except Exception as exc:  # whatever the producer raises, the write did not happen
            raise ApiError(503, "PUBLISH_FAILED", f"Kafka did not take the write: {exc}") from exc
        self.writes.labels(env.type).inc()
        return pos

    async def consistent(self, who: Principal, wait: Consistency, projection: str) -> None:
        """Return once ``projection`` reflects the write ``wait.token`` names (if any)."""
        if wait.token is None:
            return
        try:
            pos = LogPosition.parse(wait.token)
        except PositionError as exc:
            raise ApiError(422, "INVALID_CONSISTENCY_TOKEN", BAD_TOKEN) from exc
        if pos.topic not in self._gate_inputs:
            raise ApiError(422, "INVALID_CONSISTENCY_TOKEN", BAD_TOKEN)
        ends = await run_in_threadpool(self.deps.watermarks, [pos.topic])
        if pos.offset >= ends.get((pos.topic, pos.partition), 0):  # no such partition, or not written yet
            raise ApiError(422, "INVALID_CONSISTENCY_TOKEN", BAD_TOKEN)
        topics = self.deps.projection_topics[projection]

        async def read_model_ends() -> dict[tuple[str, int], int]:
            return await run_in_threadpool(self.deps.watermarks, topics)

        try:
            await wait_consistent(self.pool, who.tenant, pos, projection, read_model_ends,
                                  min(wait.wait_ms, MAX_WAIT_MS) / 1000)  # fmt: skip
        except ForeignToken as exc:
            raise ApiError(422, "INVALID_CONSISTENCY_TOKEN", BAD_TOKEN) from exc
        except ConsistencyTimeout as exc:
            raise ApiError(504, "CONSISTENCY_TIMEOUT", str(exc)) from exc
