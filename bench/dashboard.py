"""``hivemem bench dashboard``: WebSocket fan-out to connected dashboards, and what the change
notifications add to the pipeline.

Postgres only (embedded, in a temporary directory): Kafka and the processors play no part, what is
measured is what the dashboard adds.

1. pipeline cost: the projectors' write shape — ``--batches`` transactions of ``--batch`` audit rows, one
   ``INSERT ... SELECT`` each — with the change triggers disabled, then enabled while a hub LISTENs; rows/s.
2. fan-out: the dashboard routes under uvicorn (real WebSockets), ``--dashboards`` logged in for one tenant,
   while a writer commits ``--rate`` rows/s in batches of ``--batch`` for ``--seconds``. Reported: messages/s
   delivered to all dashboards together, snapshots read/s, and per batch and dashboard the time from its
   commit until that dashboard shows a total that includes it (p50/p95/p99).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import uvicorn
import websockets
from fastapi import FastAPI

from bench import BENCHES
from bench.pipeline import pct
from contracts.topics import TopicNames
from deploy.kafka_local import free_port
from deploy.postgres_local import LocalPostgres
from projections.auth import mint_token
from projections.dashboard.routes import Dashboard
from projections.http.context import ApiDeps, Ctx
from projections.migrations import migrate

TENANT = "acme"
SECRET = b"b" * 32
_INSERT = """INSERT INTO audit.events (tenant, source_topic, source_partition, source_offset, outcome, type, log_time,
                 output_topic, output_partition, output_offset)
             SELECT %s, 'hivemem.vote', %s, g, 'ACCEPTED', 'vote', 0, 'hivemem.accepted.vote', 0, g
             FROM generate_series(%s::bigint, %s::bigint) g"""


def write_batches(url: str, partition: int, batches: int, size: int) -> float:
    """Rows/s for ``batches`` transactions of ``size`` rows."""
    with psycopg.connect(url, autocommit=True) as conn:
        start = time.perf_counter()
        for i in range(batches):
            with conn.transaction():
                conn.execute(_INSERT, (TENANT, partition, i * size, (i + 1) * size - 1))
        return batches * size / (time.perf_counter() - start)


def pipeline_cost(url: str, batches: int, size: int) -> tuple[float, float]:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER TABLE audit.events DISABLE TRIGGER dashboard_notify_insert")
        off = write_batches(url, 100, batches, size)
        conn.execute("ALTER TABLE audit.events ENABLE TRIGGER dashboard_notify_insert")
    with psycopg.connect(url, autocommit=True) as listener:
        listener.execute("LISTEN hivemem_changes")  # notifications queue for a listener, as in production
        on = write_batches(url, 101, batches, size)
        drained = sum(1 for _ in listener.notifies(timeout=1.0))
    assert drained == batches, f"expected one notification per statement, got {drained}"
    return off, on


def app_for(app_url: str) -> tuple[FastAPI, Dashboard]:
    deps = ApiDeps(app_db_url=app_url, token_secret=SECRET, tenants={TENANT: None},  # type: ignore[dict-item]
                   names=TopicNames(), publisher=None, kafka_ok=lambda: True,  # type: ignore[arg-type]
                   projection_lag=dict, watermarks=lambda _: {}, projection_topics={})  # fmt: skip
    ctx = Ctx(deps)
    dash = Dashboard(ctx)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await ctx.pool.open(wait=True, timeout=30)
        yield
        await dash.hub.close()
        await ctx.pool.close()

    app = FastAPI(lifespan=lifespan)
    app.include_router(dash.router)
    return app, dash


async def fan_out(url: str, api: str, dashboards: int, rate: int, size: int, seconds: float) -> dict[str, float]:
    token = mint_token(SECRET, TENANT, "bench")
    with psycopg.connect(url) as conn:
        base = int(conn.execute("SELECT count(*) FROM audit.events WHERE tenant = %s", (TENANT,)).fetchone()[0])  # type: ignore[index]
    seen: list[list[tuple[float, int]]] = [[] for _ in range(dashboards)]  # per dashboard: (time, total)
    ready = asyncio.Event()
    connected = 0

    async def dashboard(i: int) -> None:
        nonlocal connected
        async with websockets.connect(f"{api.replace('http', 'ws')}/dashboard/ws", max_size=None) as ws:
            await ws.send(json.dumps({"token": token}))
            areas = 0
            async for raw in ws:
                msg = json.loads(raw)
                if msg["area"] == "flow":
                    total = sum(t["accepted"] + t["rejected"] for t in msg["data"]["topics"])
                    seen[i].append((time.perf_counter(), total))
                areas += 1
                if areas == 9:  # hello + the 8 first snapshots
                    connected += 1
                    if connected == dashboards:
                        ready.set()

    tasks = [asyncio.create_task(dashboard(i)) for i in range(dashboards)]
    await asyncio.wait_for(ready.wait(), 60)
    for s in seen:
        s.clear()
    commits: list[tuple[float, int]] = []  # (commit time, cumulative total after it)

    def writer() -> None:
        interval, total = size / rate, base
        with psycopg.connect(url, autocommit=True) as conn:
            start = time.perf_counter()
            i = 0
            while time.perf_counter() - start < seconds:
                conn.execute(_INSERT, (TENANT, 200, i * size, (i + 1) * size - 1))
                total += size
                commits.append((time.perf_counter(), total))
                i += 1
                time.sleep(max(0.0, start + i * interval - time.perf_counter()))

    t0 = time.perf_counter()
    await asyncio.to_thread(writer)
    await asyncio.sleep(1.0)  # the last trailing-edge pushes
    elapsed = time.perf_counter() - t0
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    latencies: list[float] = []
    for s in seen:
        j = 0
        for at, total in commits:
            while j < len(s) and s[j][1] < total:
                j += 1
            if j < len(s):
                latencies.append((s[j][0] - at) * 1000)
    latencies.sort()
    if not latencies:
        latencies = [float("nan")]
    messages = sum(len(s) for s in seen)
    return {"messages_per_s": messages / elapsed, "per_dashboard_per_s": messages / elapsed / dashboards,
            "rows_per_s": (commits[-1][1] - base) / elapsed if commits else 0.0,
            "p50": pct(latencies, 0.5), "p95": pct(latencies, 0.95), "p99": pct(latencies, 0.99),
            "samples": len(latencies)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="hivemem bench dashboard", description=BENCHES["dashboard"])
    ap.add_argument("--dashboards", type=int, default=50, help="dashboards logged in for one tenant")
    ap.add_argument("--rate", type=int, default=3000, help="rows/s written during the fan-out run")
    ap.add_argument("--batch", type=int, default=100, help="rows per statement (a projector's batch)")
    ap.add_argument("--batches", type=int, default=300, help="statements per pipeline-cost run")
    ap.add_argument("--seconds", type=float, default=10.0, help="how long the fan-out run writes")
    args = ap.parse_args(argv)
    home = Path(tempfile.mkdtemp(prefix="hivemem-bench-dash-"))
    pg = LocalPostgres(home)
    url = pg.start()
    try:
        migrate(url, "bench-app")
        params = psycopg.conninfo.conninfo_to_dict(url)
        params.update(user="hivemem_app", password="bench-app")
        app_url = psycopg.conninfo.make_conninfo(**params)  # type: ignore[arg-type]
        off, on = pipeline_cost(url, args.batches, args.batch)
        print(f"pipeline, {args.batches} statements x {args.batch} rows into audit.events:")
        print(f"  triggers off {off:,.0f} rows/s; on, with a listener {on:,.0f} rows/s "
              f"({(off - on) / off * 100:+.1f} % cost; one NOTIFY per statement)")  # fmt: skip
        app, dash = app_for(app_url)
        port = free_port()
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        try:
            r = asyncio.run(fan_out(url, f"http://127.0.0.1:{port}", args.dashboards, args.rate, args.batch,
                                    args.seconds))  # fmt: skip
        finally:
            server.should_exit = True
            thread.join(10)
        stats = dash.hub.stats
        print(f"fan-out, {args.dashboards} dashboards of one tenant, {r['rows_per_s']:,.0f} rows/s written "
              f"in statements of {args.batch} for {args.seconds:.0f} s:")  # fmt: skip
        print(f"  delivered {r['messages_per_s']:,.0f} messages/s in all ({r['per_dashboard_per_s']:.1f} per "
              f"dashboard); hub: {stats.notifications:,} notifications, "
              f"{stats.snapshots:,} snapshot reads")  # fmt: skip
        print(f"  commit -> shown on a dashboard (n={r['samples']:,.0f}): p50 {r['p50']:.1f} ms  "
              f"p95 {r['p95']:.1f} ms  p99 {r['p99']:.1f} ms")  # fmt: skip
    finally:
        pg.stop()
    return 0
