"""``/healthz`` (the process answers), ``/readyz`` (it can serve: Postgres, Kafka and every processor
alive; how far each is behind is reported beside, never failing it) and ``/metrics`` (Prometheus text).

No `from __future__ import annotations` here: FastAPI must see the real types.
"""

from typing import Any

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, Gauge, generate_latest
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from projections.caml.metrics import CamlCollector, read_snapshot
from projections.http.context import Ctx

# A loop in these states is alive: ``reconnecting`` waits out an outage at its stored offset (a model
# server it needs is down; Postgres and Kafka are checked on their own) and keeps heartbeating.
ALIVE = frozenset({"running", "reconnecting"})


class ProcessorCheck(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    ok: bool  # alive: running or reconnecting, heartbeat fresh
    state: str  # running | reconnecting | stopped, or missing (no row: never started)
    heartbeat_age_s: float | None
    lag: int | None  # records behind the end of its inputs
    behind: bool  # lag over ready_max_lag: reported, never a reason for 503
    last_batch_at: int | None  # ms since the epoch


def processor_check(state: str, age_s: float, lag: int, last_batch_at: int | None, *, stale_s: float,
                    behind_lag: int) -> ProcessorCheck:  # fmt: skip
    """A processor that has a progress row: ok iff alive (``ALIVE`` and a heartbeat younger than
    ``stale_s``), however far behind it is."""
    return ProcessorCheck(ok=state in ALIVE and age_s < stale_s, state=state, heartbeat_age_s=round(age_s, 3),
                          lag=lag, behind=lag > behind_lag, last_batch_at=last_batch_at)  # fmt: skip


MISSING = ProcessorCheck(ok=False, state="missing", heartbeat_age_s=None, lag=None, behind=False, last_batch_at=None)


class ReadyChecks(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    postgres: str
    kafka: str
    projection_lag: dict[str, int] | str
    processors: dict[str, ProcessorCheck] | str


class ReadyView(BaseModel):
    ready: bool
    behind: bool  # some processor is more than ready_max_lag records behind (catching up; still ready)
    checks: ReadyChecks


class Health(BaseModel):
    status: str


_PROGRESS = """SELECT processor, state, extract(epoch FROM clock_timestamp() - heartbeat_at)::float8, lag,
                      (extract(epoch FROM last_batch_at) * 1000)::bigint
               FROM hivemem.processor_progress"""


def router(ctx: Ctx) -> APIRouter:
    deps = ctx.deps
    r = APIRouter(tags=["health"])
    audit_gauge = Gauge("hivemem_audit_events", "Audited inbound records", ["outcome", "reason_code"],
                        registry=ctx.metrics)  # fmt: skip
    lag_gauge = Gauge("hivemem_projection_lag", "Records not yet folded", ["projection"], registry=ctx.metrics)
    proc_lag = Gauge("hivemem_processor_lag", "Records a processor is behind the end of its inputs", ["processor"],
                     registry=ctx.metrics)  # fmt: skip
    proc_alive = Gauge("hivemem_processor_alive", "1 if the processor is running or reconnecting with a fresh "
                       "heartbeat (what /readyz checks)", ["processor"], registry=ctx.metrics)  # fmt: skip
    caml_metrics = CamlCollector()  # the CAML metrics, read from the read model at each scrape
    ctx.metrics.register(caml_metrics)

    @r.get("/healthz", response_model=Health)
    async def healthz() -> Health:
        return Health(status="ok")

    async def processors() -> dict[str, ProcessorCheck]:
        async with ctx.pool.connection() as conn:
            rows: list[Any] = await (await conn.execute(_PROGRESS)).fetchall()
        seen = {str(p): (str(state), float(age), int(lag), last) for p, state, age, lag, last in rows}
        out: dict[str, ProcessorCheck] = {}
        for name in deps.processors:
            if name not in seen:
                out[name] = MISSING
                continue
            state, age, lag, last = seen[name]
            out[name] = processor_check(state, age, lag, None if last is None else int(last),
                                        stale_s=deps.ready_stale_s, behind_lag=deps.ready_max_lag)  # fmt: skip
        return out

    @r.get("/readyz", response_model=ReadyView,
           responses={503: {"model": ReadyView, "description": "Not ready: see the failing checks"}})  # fmt: skip
    async def readyz() -> JSONResponse:
        postgres, kafka = "ok", "ok"
        procs: dict[str, ProcessorCheck] | str = "not checked: postgres is down"
        try:
            async with ctx.pool.connection() as conn:
                await conn.execute("SELECT 1")
        except Exception as exc:  # reported in the body: /readyz answers, whatever is down
            postgres = f"error: {type(exc).__name__}"
        if postgres == "ok":
            try:
                procs = await processors()
            except Exception as exc:
                procs = f"error: {type(exc).__name__}"
        if not await run_in_threadpool(deps.kafka_ok):
            kafka = "unreachable"
        lag: dict[str, int] | str
        try:
            lag = await run_in_threadpool(deps.projection_lag)
        except Exception as exc:
            lag = f"error: {type(exc).__name__}"
        ready = postgres == "ok" and kafka == "ok" and isinstance(procs, dict) and all(p.ok for p in procs.values())
        behind = isinstance(procs, dict) and any(p.behind for p in procs.values())
        checks = ReadyChecks(postgres=postgres, kafka=kafka, projection_lag=lag, processors=procs)
        view = ReadyView(ready=ready, behind=behind, checks=checks)
        return JSONResponse(view.model_dump(by_alias=True), status_code=200 if ready else 503)

    @r.get("/metrics", response_class=Response,
           responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}},
                            "description": "Prometheus text exposition"}})  # fmt: skip
    async def metrics() -> Response:
        try:
            async with ctx.pool.connection() as conn:
                cur = await conn.execute("SELECT outcome, reason_code, n FROM hivemem.audit_counts()")
                for outcome, reason, n in await cur.fetchall():
                    audit_gauge.labels(outcome, reason).set(float(n))  # type: ignore[arg-type]
            for name, check in (await processors()).items():
                proc_alive.labels(name).set(1.0 if check.ok else 0.0)
                if check.lag is not None:
                    proc_lag.labels(name).set(check.lag)
        except Exception:  # the counters still answer while Postgres is down
            pass
        try:
            for name, lag in (await run_in_threadpool(deps.projection_lag)).items():
                lag_gauge.labels(name).set(lag)
        except Exception:  # and while Kafka is
            pass
        try:
            async with ctx.pool.connection() as conn:
                caml_metrics.update(await read_snapshot(conn))
        except Exception:  # the last CAML values stay
            pass
        return Response(generate_latest(ctx.metrics), media_type=CONTENT_TYPE_LATEST)

    return r
