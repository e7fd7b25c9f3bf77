"""``hivemem bench pipeline``: throughput and write->queryable latency on the real parts.

Starts its own Kafka + Postgres + services in a temporary HIVEMEM_HOME, then measures:
1. raw Kafka produce and consume throughput (confluent-kafka, same machine, same run);
2. sustained envelopes/s through gate and audit projection (signed envelopes, as fast as
   the producer goes, until every one is audited);
3. write->queryable latency at a fixed rate: audit row's projected_at minus the envelope's
   timestamp (same clock), p50/p95/p99.

For phases 2 and 3 it also prints the CPU seconds each process (every service, Kafka, Postgres
with its backends, the bench itself) spent, per envelope: the figure that says which process is
the limit and why two machines differ. ``--profile DIR`` records the gate and the projectors
with py-spy (``pip install py-spy``) during phase 2, as speedscope files.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench import BENCHES
from bench.cpu import CpuSample, cpu_model, python_speed, report
from bench.temp_stack import running_stack, stack_pids
from contracts.avro import encode_envelope
from contracts.topics import partition_key
from hivemem.demo import claw_client
from hivemem.settings import Settings
from producers.claw_client import producer_config


def produce_waiting(producer: Producer, topic: str, value: bytes, wait_s: float = 0.01, **kw: Any) -> None:
    """``producer.produce``, waiting out a full local queue (BufferError) by serving deliveries meanwhile."""
    while True:
        try:
            producer.produce(topic, value, **kw)
            return
        except BufferError:
            producer.poll(wait_s)


def raw_kafka(bootstrap: str, n: int, size: int = 400) -> tuple[float, float]:
    topic = f"bench.raw.{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result()
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 2})
    payload = b"x" * size
    t0 = time.perf_counter()
    for i in range(n):
        produce_waiting(p, topic, payload, key=str(i % 64).encode())
        p.poll(0)
    p.flush()
    produce_rate = n / (time.perf_counter() - t0)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got, t0 = 0, time.perf_counter()
    while got < n:
        got += sum(1 for m in c.consume(1000, 1.0) if m.error() is None)
    consume_rate = n / (time.perf_counter() - t0)
    c.close()
    return produce_rate, consume_rate


Db = psycopg.Connection[tuple[object, ...]]  # one for the whole run: a connection per poll costs a fork


def folded(conn: Db, consumer: str, topics: list[str]) -> int:
    """Records of ``topics`` a consumer has folded (the sum of its stored offsets): an index lookup, where
    counting audit rows reads every one of them. Polled 10 times a second, the count cost Postgres more as
    the table grew (its CPU per envelope rose from 37 to 53 us between a 50,000- and a 200,000-envelope run)."""
    row = conn.execute("SELECT coalesce(sum(next_offset), 0) FROM hivemem.projection_offsets "
                       "WHERE consumer = %s AND topic = ANY(%s)", (consumer, topics)).fetchone()  # fmt: skip
    return int(str(row[0])) if row else 0


def audited(conn: Db, trace: str) -> int:
    # The gate's verdicts only: with every service running, later stages (KMMS) add rows of their own.
    row = conn.execute("SELECT count(*) FROM audit.events WHERE tenant = 'acme' AND trace_id = %s AND stage = 'gate'",
                       (trace,)).fetchone()  # fmt: skip
    return int(str(row[0])) if row else 0


def sustained(settings: Settings, db: Db, n: int, pids: dict[str, int] | None = None,
              profile: Path | None = None) -> tuple[float, dict[str, float]]:  # fmt: skip
    trace = f"bench-{uuid.uuid4().hex}"
    # Eight claws, one producer (as one process of a fleet would): eight producers would each
    # send an eighth of the records in batches an eighth the size.
    shared = Producer(producer_config(settings.require_kafka()))
    clients = [claw_client(settings, "acme", f"bench-{i}", producer=shared) for i in range(8)]
    envs = [clients[i % 8].build("episode", {"episodeId": f"e{i}", "about": f"a{i % 32}", "content": "bench",
                                             "occurredAt": 0}, trace_id=trace) for i in range(n)]  # fmt: skip
    # Signed and encoded before the clock starts: claws do that on their own machines.
    topic = settings.topics.inbound("episode")
    wire = [(partition_key("acme", e.aggregate), encode_envelope(e)) for e in envs]
    # Nothing else is written meanwhile: the audit projector's offsets on the verdict topics say when all n are in.
    verdicts = [settings.topics.accepted("episode"), settings.topics.rejected]
    start = folded(db, "audit", verdicts)
    spies = spy(profile, pids or {}) if profile is not None else []
    before = CpuSample.take(pids or {})
    t0 = time.perf_counter()
    for key, value in wire:
        produce_waiting(shared, topic, value, key=key)
    shared.flush()
    while folded(db, "audit", verdicts) - start < n:
        time.sleep(0.1)
    wall = time.perf_counter() - t0
    spent = CpuSample.take(pids or {}).since(before)
    for p in spies:
        p.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
        p.wait(60)
    if audited(db, trace) != n:  # after the clock: every one of them accepted and audited, once
        raise SystemExit(f"bench pipeline: {audited(db, trace):,} of {n:,} envelopes audited as accepted")
    return n / wall, spent


def spy(out: Path, pids: dict[str, int], names: tuple[str, ...] = ("gate", "gate-0", "gate-1", "projectors")
        ) -> list[subprocess.Popen[bytes]]:  # fmt: skip
    # The virtualenv's own bin first: py-spy installed there need not be on PATH.
    exe = shutil.which("py-spy", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if exe is None:
        raise SystemExit("--profile needs py-spy on PATH (pip install py-spy)")
    out.mkdir(parents=True, exist_ok=True)
    return [subprocess.Popen([exe, "record", "--pid", str(pids[name]), "--rate", "100", "--format", "speedscope",
                              "--output", str(out / f"{name}.speedscope.json")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for name in names if name in pids]  # fmt: skip


def latency(settings: Settings, db: Db, rate: int, seconds: float, pids: dict[str, int] | None = None) -> Latency:
    trace = f"lat-{uuid.uuid4().hex}"
    c = claw_client(settings, "acme", "bench-lat")
    n = int(rate * seconds)
    before = CpuSample.take(pids or {})
    start = time.perf_counter()
    for i in range(n):
        target = start + i / rate
        while time.perf_counter() < target:
            time.sleep(max(0.0, min(0.001, target - time.perf_counter())))
        c.publish_envelope_async(c.build("episode", {"episodeId": f"l{i}", "about": f"a{i % 32}",
                                                     "content": "lat", "occurredAt": 0}, trace_id=trace),
                                 lambda tok, err: None)  # fmt: skip
    c.flush()
    while audited(db, trace) < n:
        time.sleep(0.1)
    spent = CpuSample.take(pids or {}).since(before)
    rows = db.execute("SELECT extract(epoch FROM projected_at) * 1000 - envelope_ts, log_time - envelope_ts "
                      "FROM audit.events WHERE trace_id = %s AND stage = 'gate'", (trace,)).fetchall()  # fmt: skip
    return Latency(sorted(float(str(r[0])) for r in rows), sorted(float(str(r[1])) for r in rows), spent)


@dataclass(frozen=True)
class Latency:
    total: list[float]  # envelope timestamp -> audit row projected (ms)
    to_kafka: list[float]  # envelope timestamp -> the broker's append time of the inbound record
    cpu: dict[str, float]


def pct(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="hivemem bench pipeline", description=BENCHES["pipeline"])
    ap.add_argument("--envelopes", type=int, default=50000, help="envelopes in the raw Kafka and sustained phases")
    ap.add_argument("--rate", type=int, default=500, help="envelopes/s in the write->queryable phase")
    ap.add_argument("--seconds", type=float, default=20.0, help="how long the write->queryable phase runs")
    ap.add_argument("--warmup", type=float, default=60.0, help="seconds at --rate before measuring")
    ap.add_argument("--profile", type=Path, default=None, help="record gate and projectors with py-spy into DIR")
    ap.add_argument("--all-services", action="store_true",
                    help="start every service, not only the measured path (the episodes then also feed KMMS: "
                         "chunking, the embedding model, consolidation, all on the same cores)")  # fmt: skip
    ap.add_argument("--gates", type=int, default=1, help="gate instances splitting the partitions (streams/group.py)")
    args = ap.parse_args(argv)
    services = None if args.all_services else ["gate", "projectors"]
    with running_stack(services=services, gates=args.gates) as stack, psycopg.connect(stack.settings.require_database(),
                                                                    autocommit=True) as db:  # fmt: skip
        settings = stack.settings
        pids = {**stack_pids(stack), "bench (producer)": os.getpid()}
        # A fresh broker spends its first minute compiling (the JVM's JIT: 150 % of a core at
        # 500/s, 45 % once warm); a deployed broker is warm. So is every process, after this.
        raw_kafka(settings.require_kafka(), args.envelopes)
        sustained(settings, db, 10_000)
        latency(settings, db, args.rate, args.warmup)
        produce, consume = raw_kafka(settings.require_kafka(), args.envelopes)
        e2e, spent = sustained(settings, db, args.envelopes, pids, args.profile)
        measured = latency(settings, db, args.rate, args.seconds, pids)
        lat, lat_spent = measured.total, measured.cpu
        print(f"machine                  {cpu_model()}, {os.cpu_count()} cores; {python_speed()}")
        print(f"services                 {', '.join(stack.services)}")
        print(f"raw Kafka produce        {produce:10,.0f} msg/s")
        print(f"raw Kafka consume        {consume:10,.0f} msg/s")
        print(f"gate + audit projection  {e2e:10,.0f} envelopes/s  ({e2e / produce:.1%} of raw produce, "
              f"{e2e / consume:.1%} of raw consume)")  # fmt: skip
        print(f"CPU during the sustained phase ({args.envelopes:,} envelopes, {args.envelopes / e2e:.1f} s):")
        print("\n".join(report(spent, args.envelopes, args.envelopes / e2e)))
        print(f"write->queryable at {args.rate}/s for {args.seconds:.0f} s (n={len(lat)}): "
              f"p50 {pct(lat, 0.5):.1f} ms  p95 {pct(lat, 0.95):.1f} ms  p99 {pct(lat, 0.99):.1f} ms  "
              f"mean {statistics.fmean(lat):.1f} ms")  # fmt: skip
        to_kafka = measured.to_kafka
        print(f"  of which producer -> Kafka (the inbound record's append time): p50 {pct(to_kafka, 0.5):.1f} ms  "
              f"p99 {pct(to_kafka, 0.99):.1f} ms")  # fmt: skip
        print(f"CPU during the latency phase ({len(lat):,} envelopes):")
        print("\n".join(report(lat_spent, len(lat), args.seconds)))
        if args.profile is not None:
            print(f"py-spy profiles (open in https://www.speedscope.app): {args.profile}")
        return 0
