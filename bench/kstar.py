"""``hivemem bench kstar``: KSTAR export and import rates and token-verify latency on a real stack.

1. Ingest ``--traces`` traces into one claw's memory, published fire-and-forget as ``kstar`` envelopes:
   records/s from the first publish until ``kstar.records`` holds them all (the kstar processor's throughput).
2. Export that memory to a kstar-bundle, plain and encrypted (scrypt + AES-256-GCM): records/s, bundle bytes, and
   the time to load (decrypt) and verify each.
3. Import each bundle into a fresh memory of another claw, from its bytes to the last verdict: records/s; then the
   plain bundle again into the same memory (idempotent: nothing imported).
4. ``--verifies`` control-token verifies over HTTP (after 100 warm-up), on 50 tokens delegated from one root:
   client p50/p95/p99.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
from confluent_kafka import Producer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from bench import BENCHES
from bench.caml import scalar
from bench.figures import dist, load
from bench.pii import cpu_model
from bench.temp_stack import running_stack
from contracts.avro import encode_envelope
from contracts.topics import partition_key
from governance.kstar import bundle as b
from governance.kstar.tokens import issuer_key
from hivemem.demo import claw_client
from hivemem.settings import Settings
from producers.claw_client import EnvelopePublisher, producer_config
from projections.auth import mint_token
from projections.kstar.io import ImportResult, Writer, connect, export_document, import_document

TENANT = "acme"
CLAW = "bench-claw"
IMPORTER = "bench-import"
PASSPHRASE = "correct horse battery staple"
SCOPE = "course:CS101"
CHILDREN = 50
T0 = datetime(2026, 1, 1, tzinfo=UTC)
DOMAINS = ("education", "ops", "support", "billing", "research")
ACTIONS = ("grade", "deploy", "reply", "refund", "summarise", "escalate", "review")
TOOLS = ("search", "calculator", "sql", "http", "editor", "calendar")
TAGS = ("bench", "nightly", "cs101", "urgent", "followup", "batch", "audit")
COLUMNS = (TextColumn("{task.description:<18}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
           TimeRemainingColumn())  # fmt: skip


def trace(i: int, r: random.Random) -> dict[str, Any]:
    at = T0 + timedelta(seconds=i)
    return {"id": f"trace-{i:07d}", "timestamp": at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z",
            "situation": {"domain": r.choice(DOMAINS), "actor": f"urn:principal:user:{r.randrange(500)}",
                          "channel": r.choice(["chat", "email", "api"])},
            "task": {"goal": f"handle request {i} about {' '.join(r.sample(TAGS, 2))}",
                     "constraints": [{"deadline_s": r.randrange(60, 3600)}, "no PII in logs"]},
            "action": {"type": r.choice(ACTIONS), "parameters": {"attempt": r.randrange(1, 4), "item": f"x{i % 997}"},
                       "tools_used": r.sample(TOOLS, 2)},
            "result": {"success": r.random() < 0.9, "outcome": {"score": round(r.random(), 3), "step": i}},
            "metadata": {"mode": "background", "tags": r.sample(TAGS, 3)}}  # fmt: skip


def ingest(settings: Settings, db: str, n: int, console: Console) -> float:
    """Envelopes built, signed and encoded first (the bench's own CPU stays out of the timed part), then sent."""
    client = claw_client(settings, TENANT, CLAW)
    r = random.Random(7)
    topic = settings.topics.inbound("kstar")
    count = f"SELECT count(*) FROM kstar.records WHERE tenant = '{TENANT}' AND memory = '{CLAW}'"
    refused = f"SELECT count(*) FROM audit.events WHERE tenant = '{TENANT}' AND stage = 'kstar'"
    with Progress(*COLUMNS, console=console) as bar, psycopg.connect(db, autocommit=True) as conn:
        prep = bar.add_task("signed", total=n)
        wire: list[tuple[bytes, bytes]] = []
        for i in range(n):
            doc = json.dumps(trace(i, r), separators=(",", ":"))
            payload = {"opId": f"bench-{i}", "memory": CLAW, "op": "STORE", "kind": "trace",
                       "recordId": f"trace-{i:07d}", "document": doc}  # fmt: skip
            env = client.build("kstar", payload)
            wire.append((partition_key(env.tenant, env.aggregate), encode_envelope(env)))
            if i % 2000 == 1999:
                bar.update(prep, completed=i + 1)
        bar.update(prep, completed=n)
        pub, done = bar.add_task("published", total=n), bar.add_task("in the read model", total=n)
        t0 = time.perf_counter()
        for i, (key, value) in enumerate(wire):
            client.produce_raw(topic, key, value)
            if i % 2000 == 1999:
                client.flush(60)
                bar.update(pub, completed=i + 1)
                bar.update(done, completed=scalar(conn, count))
        client.flush(120)
        bar.update(pub, completed=n)
        del wire
        while (k := scalar(conn, count)) < n:
            bar.update(done, completed=k)
            if bad := scalar(conn, refused):
                raise SystemExit(f"{bad} kstar writes refused: the bench traces should be valid")
            time.sleep(0.2)
        bar.update(done, completed=k)
    return time.perf_counter() - t0


@contextmanager
def clock(into: dict[str, float], key: str) -> Iterator[None]:
    t = time.perf_counter()
    yield
    into[key] = time.perf_counter() - t


def import_bundle(settings: Settings, publisher: EnvelopePublisher, memory: str, data: bytes, passphrase: bytes | None,
                  console: Console, what: str) -> tuple[ImportResult, float]:  # fmt: skip
    """From the file's bytes (decrypt, verify) to the processor's last verdict."""
    writer = Writer(TENANT, IMPORTER, settings.load_config().tenants[TENANT])
    t = time.perf_counter()
    decoded = b.decode_bundle(data, passphrase)  # load + verify, as `hivemem import` does
    plain = decoded.bundle
    total = sum(len(v) for v in plain["memory"].values())
    with Progress(*COLUMNS, console=console) as bar:
        sent, judged = bar.add_task(f"{what}: sent", total=total), bar.add_task(f"{what}: judged", total=total)

        def tick(task: TaskID) -> Callable[[int], None]:
            return lambda k: bar.advance(task, k)

        with connect(settings.require_database(), writer.tenant) as conn:
            result = import_document(conn, writer, memory, plain, "merge", None, publisher, 900.0,
                                     tick(sent), tick(judged), decoded.check.checksum)  # fmt: skip
    seconds = time.perf_counter() - t
    if result.refused or result.pending or result.conflicts:
        raise SystemExit(f"{what}: {json.dumps(result.to_wire())[:500]}")
    return result, seconds


def tokens(api: str, secret: bytes, verifies: int, console: Console) -> list[float]:
    bearer = mint_token(secret, TENANT, "bench", claw_id=CLAW, ttl_s=6 * 3600)
    now = datetime.now(UTC)
    with httpx.Client(base_url=api, headers={"Authorization": f"Bearer {bearer}"}, timeout=60) as h:

        def issue(body: dict[str, Any]) -> str:
            resp = h.post("/kstar/v1/tokens", params={"waitMs": 20000}, json=body)
            if resp.status_code != 200 or resp.json().get("status") != "STORED":
                raise SystemExit(f"/kstar/v1/tokens: {resp.status_code} {resp.text[:300]}")
            return str(resp.json()["recordId"])

        root = issue({"tokenType": "delegation", "scope": SCOPE, "permissions": ["evaluate", "delegate"],
                      "expiresAt": (now + timedelta(days=1)).isoformat().replace("+00:00", "Z")})  # fmt: skip
        child_exp = (now + timedelta(hours=12)).isoformat().replace("+00:00", "Z")
        children = [issue({"tokenType": "capability_grant", "scope": SCOPE, "permissions": ["evaluate"],
                           "expiresAt": child_exp, "delegationChain": [root]}) for _ in range(CHILDREN)]  # fmt: skip
        out: list[float] = []
        with Progress(*COLUMNS, console=console) as bar:
            task = bar.add_task("verifies", total=verifies + 100)
            for i in range(verifies + 100):
                t = time.perf_counter()
                resp = h.post("/kstar/v1/tokens/verify", json={"tokenId": children[i % CHILDREN], "scope": SCOPE})
                ms = (time.perf_counter() - t) * 1000
                if resp.status_code != 200 or not resp.json().get("valid"):
                    raise SystemExit(f"/kstar/v1/tokens/verify: {resp.status_code} {resp.text[:300]}")
                if i >= 100:
                    out.append(ms)
                bar.advance(task)
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="hivemem bench kstar", description=BENCHES["kstar"])
    ap.add_argument("--traces", type=int, default=100_000, help="traces ingested, exported and imported")
    ap.add_argument("--verifies", type=int, default=2_000, help="measured token verifies (after 100 warm-up)")
    ap.add_argument("--out", help="also write the report to this file")
    args = ap.parse_args(argv)
    console = Console(stderr=True)
    lines: list[str] = []

    def say(line: str = "") -> None:
        print(line, flush=True)
        lines.append(line)

    n = args.traces
    say(f"hivemem bench kstar  {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    say(f"machine: {cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}; load average "
        f"{load()} before the start (the machine is shared)")  # fmt: skip
    with running_stack(services=["gate", "kstar", "projectors", "api"]) as stack:
        settings = stack.settings
        db = settings.require_database()
        config = settings.load_config()
        say(f"\n1. ingest: {n:,} traces into memory {CLAW!r} (signed and encoded beforehand, sent fire-and-forget)  "
            f"[load {load()}]")  # fmt: skip
        secs = ingest(settings, db, n, console)
        say(f"   {secs:.1f} s from the first publish to all in kstar.records = {n / secs:,.0f} records/s")

        say(f"\n2. export (read model -> signed kstar-bundle)  [load {load()}]")
        signer = issuer_key(config.token_secret, TENANT, CLAW)
        flt = b.ExportFilter()
        t: dict[str, float] = {}
        # export_document gives the file's bytes too (one serialisation, encryption included)
        with clock(t, "export"), connect(db, TENANT) as conn:
            plain = export_document(conn, TENANT, CLAW, flt, signer, None).data
        t["dump"] = 0.0
        with clock(t, "export_enc"), connect(db, TENANT) as conn:
            enc = export_document(conn, TENANT, CLAW, flt, signer, PASSPHRASE).data
        t["dump_enc"] = 0.0
        with clock(t, "load"):
            loaded = b.load_document(plain)
        with clock(t, "verify"):
            check = b.verify_bundle(loaded)
        with clock(t, "load_enc"):
            loaded_enc = b.load_document(enc, PASSPHRASE.encode())
        with clock(t, "verify_enc"):
            b.verify_bundle(loaded_enc)
        del loaded, loaded_enc
        if check.counts.get("traces", n) != n:
            raise SystemExit(f"the bundle holds {check.counts}, not {n} traces")
        e_plain, e_enc = t["export"] + t["dump"], t["export_enc"] + t["dump_enc"]
        say(f"   plain      {e_plain:6.2f} s = {n / e_plain:8,.0f} records/s  (read model to file bytes); "
            f"{len(plain) / 1e6:,.1f} MB")  # fmt: skip
        say(f"   encrypted  {e_enc:6.2f} s = {n / e_enc:8,.0f} records/s  (read model to file bytes, encryption "
            f"included); {len(enc) / 1e6:,.1f} MB")  # fmt: skip
        say(f"   load + verify: plain {t['load']:.2f} + {t['verify']:.2f} s; encrypted (decrypt) "
            f"{t['load_enc']:.2f} + {t['verify_enc']:.2f} s  (signed: {check.signed})")  # fmt: skip

        say(f"\n3. import into fresh memories of claw {IMPORTER!r}, bytes -> every verdict in  [load {load()}]")
        publisher = EnvelopePublisher(Producer(producer_config(settings.require_kafka())), settings.topics)
        res, i_plain = import_bundle(settings, publisher, f"{IMPORTER}/plain", plain, None, console, "plain")
        say(f"   plain      {i_plain:6.2f} s = {n / i_plain:8,.0f} records/s  (imported {res.imported_count:,})")
        res, i_enc = import_bundle(settings, publisher, f"{IMPORTER}/enc", enc, PASSPHRASE.encode(), console, "enc")
        say(f"   encrypted  {i_enc:6.2f} s = {n / i_enc:8,.0f} records/s  (imported {res.imported_count:,})")
        again, i_again = import_bundle(settings, publisher, f"{IMPORTER}/plain", plain, None, console, "again")
        ok = again.imported_count == 0 and again.unchanged == n
        say(f"   re-import  {i_again:6.2f} s: imported {again.imported_count}, unchanged {again.unchanged:,}"
            f"  {'(idempotent)' if ok else '(NOT IDEMPOTENT)'}")  # fmt: skip

        say(f"\n4. token verify over HTTP: {args.verifies} on {CHILDREN} delegated tokens (after 100 warm-up)  "
            f"[load {load()}]")  # fmt: skip
        lat = tokens(stack.api_url, config.token_secret, args.verifies, console)
        say(f"   verify     {dist(lat)}")

    say("\nsummary")
    say(f"   traces                 {n:,}  ({len(plain) / 1e6:,.1f} MB plain, {len(enc) / 1e6:,.1f} MB encrypted)")
    say(f"   ingest (processor)     {n / secs:8,.0f} records/s")
    say(f"   export plain / enc     {n / e_plain:8,.0f} / {n / e_enc:,.0f} records/s")
    say(f"   import plain / enc     {n / i_plain:8,.0f} / {n / i_enc:,.0f} records/s  (re-import {i_again:.1f} s, "
        f"{'idempotent' if ok else 'NOT idempotent'})")  # fmt: skip
    say(f"   token verify           {dist(lat)}")
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0 if ok else 1
