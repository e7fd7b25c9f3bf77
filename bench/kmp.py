"""``hivemem bench kmp``: KMP ingest rate and read latency on a real stack (Kafka, Postgres, services).

1. Ingest ``--abouts`` x ``--entries`` entries, 20 per ingest, each about a chain (every entry
   ``follows`` the one before; every fifth ``depends_on`` an earlier one with evidence), published
   fire-and-forget by 4 writers: entries/s from the first publish until the read model holds them all.
2. ``--queries`` reads each of wake, ask, near and trace on random abouts over HTTP (after 20
   warm-up ones): client p50/p95/p99.
3. MCP call overhead: the same ask through the API's streamable-HTTP MCP endpoint, when it is there.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import time
from datetime import UTC, datetime
from typing import Any

import httpx
import psycopg
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from bench import BENCHES
from bench.caml import scalar
from bench.figures import dist, load
from bench.pii import cpu_model
from bench.temp_stack import temporary_stack
from hivemem.demo import claw_client
from producers.claw_client import ClawClient
from projections.auth import mint_token

TENANT = "acme"
PER_INGEST = 20
T0 = 1_767_225_600_000
WORDS = (
    "deploy",
    "rollback",
    "cache",
    "pool",
    "latency",
    "queue",
    "retry",
    "timeout",
    "shard",
    "replica",
    "index",
    "vacuum",
    "lock",
    "backup",
    "canary",
    "alert",
    "quota",
    "token",
    "schema",
    "migration",
)


def ingest_payload(about: str, start: int, count: int, r: random.Random) -> dict[str, Any]:
    entries: list[dict[str, Any]] = []
    relations: list[dict[str, Any]] = []
    evidence: list[dict[str, Any]] = []
    for i in range(start, start + count):
        words = " ".join(r.sample(WORDS, 4))
        entries.append({"id": f"e{i}", "kind": r.choice(["observation", "action", "result", "decision"]),
                        "text": f"step {i}: {words}", "occurredAt": T0 + i * 60_000,
                        "coordinates": [{"dimension": f"session:{i // 25}", "sequence": i}]})  # fmt: skip
        if i > 0:
            relations.append({"sourceRef": f"e{i}", "targetRef": f"e{i - 1}", "rel": "follows",
                              "semanticClass": "PROCEDURAL"})  # fmt: skip
        if i % 5 == 4:
            evidence.append({"id": f"v{i}", "text": f"log excerpt for step {i}", "supports": [f"e{i}"]})
            relations.append({"sourceRef": f"e{i}", "targetRef": f"e{i - 4}", "rel": "depends_on",
                              "semanticClass": "CAUSAL", "why": "needs its output",
                              "evidenceRefs": [f"v{i}"]})  # fmt: skip
    dims = [{"id": f"session:{s}", "kind": "session"} for s in sorted({start // 25, (start + count - 1) // 25})]
    return {"ingestId": f"{about}-{start}", "about": about, "dimensions": dims, "entries": entries,
            "relations": relations, "evidence": evidence,
            "contextRefs": [f"e{start - 1}", f"e{max(0, start - 4)}"] if start else []}  # fmt: skip


def bulk_ingest(writers: list[ClawClient], abouts: int, entries: int, db: str, console: Console) -> tuple[float, int]:
    r = random.Random(7)
    total = abouts * entries
    t0 = time.perf_counter()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn())  # fmt: skip
    with Progress(*columns, console=console) as bar, psycopg.connect(db, autocommit=True) as conn:
        pub = bar.add_task("published", total=total)
        done = bar.add_task("in the read model", total=total)
        k = 0
        # Chunk by position first so every about's chain grows in order (its ingests share a partition).
        for start in range(0, entries, PER_INGEST):
            for a in range(abouts):
                about = f"case-{a:05d}"
                w = writers[a % len(writers)]  # one writer per about: its ingests reach the partition in order
                w.publish_envelope_async(w.build("kmp_ingest", ingest_payload(about, start, min(PER_INGEST,
                                                 entries - start), r)), lambda tok, err: None)  # fmt: skip
                k += 1
                if k % 200 == 0:
                    for x in writers:
                        x.flush(60)
                    bar.update(pub, completed=min(total, k * PER_INGEST))
                    bar.update(done, completed=scalar(conn, "SELECT count(*) FROM kmp.kmp_entries"))
        for x in writers:
            x.flush(120)
        bar.update(pub, completed=total)
        while (n := scalar(conn, "SELECT count(*) FROM kmp.kmp_entries")) < total:
            bar.update(done, completed=n)
            refused = scalar(conn, "SELECT count(*) FROM audit.events WHERE stage = 'kmp'")
            if refused:
                raise SystemExit(f"{refused} ingests refused: the bench corpus should be valid")
            time.sleep(0.5)
        bar.update(done, completed=n)
    return time.perf_counter() - t0, total


def timed(h: httpx.Client, path: str, bodies: list[dict[str, Any]]) -> list[float]:
    out = []
    for b in bodies:
        t = time.perf_counter()
        resp = h.post(path, json=b)
        out.append((time.perf_counter() - t) * 1000)
        if resp.status_code != 200:
            raise SystemExit(f"{path}: {resp.status_code} {resp.text[:300]}")
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="hivemem bench kmp", description=BENCHES["kmp"])
    ap.add_argument("--abouts", type=int, default=1_000, help="abouts (cases) loaded")
    ap.add_argument("--entries", type=int, default=100, help="entries per about")
    ap.add_argument("--queries", type=int, default=200, help="measured reads per operation")
    args = ap.parse_args(argv)
    console = Console(stderr=True)
    print(f"hivemem bench kmp  {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}; load average "
          f"{load()} before the start (the machine is shared)")  # fmt: skip
    with temporary_stack() as settings:
        api = f"http://{settings.api_host}:{settings.api_port}"
        token = mint_token(settings.load_config().token_secret, TENANT, "bench", "reader", ttl_s=6 * 3600)
        writers = [claw_client(settings, TENANT, f"writer-{i}") for i in range(4)]
        seconds, total = bulk_ingest(writers, args.abouts, args.entries, settings.require_database(), console)
        print(f"\n1. ingest: {total:,} entries in {args.abouts:,} abouts x {args.entries} "
              f"({PER_INGEST} per ingest, with relations and evidence)  [load {load()}]")  # fmt: skip
        print(f"   {seconds:.1f} s from the first publish to all in the read model = {total / seconds:,.0f} entries/s "
              f"({total / PER_INGEST / seconds:,.0f} ingests/s)")  # fmt: skip
        r = random.Random(11)
        n = args.queries

        def about() -> str:
            return f"case-{r.randrange(args.abouts):05d}"

        ops: dict[str, list[dict[str, Any]]] = {
            "wake": [{"about": about()} for _ in range(n + 20)],
            "ask": [{"about": about(), "question": " ".join(r.sample(WORDS, 2))} for _ in range(n + 20)],
            "near": [{"about": about(), "cursor": {"ref": f"e{r.randrange(args.entries)}"},
                      "window": {"before": 5, "after": 5}} for _ in range(n + 20)],
            "trace": [{"about": about(), "from": f"e{args.entries - 1}", "to": f"e{r.randrange(args.entries)}",
                       "maxDepth": 32} for _ in range(n + 20)],
        }  # fmt: skip
        print(f"\n2. reads over HTTP, {n} each on random abouts (client side, after 20 warm-up)  [load {load()}]")
        with httpx.Client(base_url=api, headers={"Authorization": f"Bearer {token}"}, timeout=60) as h:
            for op, bodies in ops.items():
                timed(h, f"/kmp/v1/{op}", bodies[:20])
                print(f"   {op:<6} {dist(timed(h, f'/kmp/v1/{op}', bodies[20:]))}")
            mcp_overhead(h, api, token, ops["ask"][20:])
    return 0


def mcp_overhead(h: httpx.Client, api: str, token: str, bodies: list[dict[str, Any]]) -> None:
    try:
        from bench.mcp_overhead import compare  # the MCP endpoint and its client, if built
    except ImportError:
        print("\n3. MCP overhead: not measured (no MCP endpoint in this build)")
        return
    print(f"\n3. {compare(api, token, 'kernel_ask', '/kmp/v1/ask', bodies[:100])}")
