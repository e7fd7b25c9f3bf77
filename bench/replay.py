"""``hivemem bench replay``: how fast a read model is rebuilt from the log (``hivemem replay``).

Starts a stack with the gate and the projectors in a temporary home, writes N accepted episode
records straight onto ``accepted.episode`` (as the gate would: the inbound position and log time
in headers; 1,000 distinct signed envelopes, each at many positions, so building them does not
dominate), waits for the live audit read model to fold them, then rebuilds it with the same code
``hivemem replay`` runs (progress bar and ETA), prints events/s and checks the digests are equal.
Default N: 1,000,000.
"""

from __future__ import annotations

import argparse
import time

import psycopg
from confluent_kafka import Producer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from bench.cpu import cpu_model
from bench.pipeline import produce_waiting
from bench.temp_stack import running_stack
from contracts.avro import encode_envelope
from contracts.positions import LogPosition
from contracts.topics import partition_key
from hivemem.demo import claw_client
from hivemem.services import projections
from hivemem.settings import Settings
from projections.replay import rebuild
from streams.records import LOG_TIME_HEADER, SRC_HEADER


def write_log(settings: Settings, n: int, console: Console) -> float:
    """N accepted episodes on the log; returns records/s written."""
    names = settings.topics
    client = claw_client(settings, "acme", "bench-replay")
    envs = [client.build("episode", {"episodeId": f"r{i}", "about": f"a{i % 32}", "content": f"replay {i}",
                                     "occurredAt": 0}) for i in range(1000)]  # fmt: skip
    values = [(partition_key("acme", e.aggregate), encode_envelope(e)) for e in envs]
    producer = Producer({"bootstrap.servers": settings.require_kafka(), "enable.idempotence": True, "acks": "all",
                         "linger.ms": 20, "batch.size": 1_000_000})  # fmt: skip
    topic, inbound = names.accepted("episode"), names.inbound("episode")
    now = int(time.time() * 1000)
    t0 = time.perf_counter()
    with Progress(TextColumn("writing the log"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=console) as progress:  # fmt: skip
        task = progress.add_task("write", total=n)
        for i in range(n):
            key, value = values[i % len(values)]
            headers: list[tuple[str, str | bytes | None]] = [
                (SRC_HEADER, LogPosition(inbound, i % 3, i // 3).encode()),
                (LOG_TIME_HEADER, str(now).encode()),
            ]
            produce_waiting(producer, topic, value, 0.05, key=key, partition=i % 3, headers=headers)
            if i % 10_000 == 9_999:
                producer.poll(0)
                progress.advance(task, 10_000)
        producer.flush()
    return n / (time.perf_counter() - t0)


def timed_replay(settings: Settings, model: str, console: Console) -> str:
    """Rebuild read model ``model`` from the log as ``hivemem replay`` does (progress bar, ETA); one line with
    its events/s, the fold's alone, and whether the digests are equal."""
    projection = projections(settings)[model]
    with Progress(TextColumn(f"replaying {model}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=console) as progress:  # fmt: skip
        task = progress.add_task(model, total=None)
        last_batch = [0.0]

        def on_batch(n: int) -> None:
            progress.advance(task, n)
            last_batch[0] = time.perf_counter()

        t0 = time.perf_counter()
        result = rebuild(projection, settings.require_kafka(), settings.require_database(), settings.topics,
                         on_total=lambda n: progress.update(task, total=n), on_batch=on_batch)  # fmt: skip
        took, fold = time.perf_counter() - t0, max(last_batch[0] - t0, 1e-9)
    return (f"replay of {model}: {result.records:,} events in {took:.1f} s = {result.records / took:,.0f} events/s "
            f"(fold alone {result.records / fold:,.0f}/s; both digests and the swap the rest); digests "
            f"{'equal' if result.equal else 'DIFFERENT'}")  # fmt: skip


def folded(conn: psycopg.Connection[tuple[object, ...]], topic: str) -> int:
    row = conn.execute("SELECT coalesce(sum(next_offset), 0) FROM hivemem.projection_offsets "
                       "WHERE consumer = 'audit' AND topic = %s", (topic,)).fetchone()  # fmt: skip
    return int(str(row[0])) if row else 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="hivemem bench replay")
    ap.add_argument("--events", type=int, default=1_000_000)
    args = ap.parse_args(argv)
    console = Console()
    with running_stack(services=["gate", "projectors"]) as stack:
        s = stack.settings
        db, topic = s.require_database(), s.topics.accepted("episode")
        written = write_log(s, args.events, console)
        t0 = time.perf_counter()
        with psycopg.connect(db, autocommit=True) as conn:  # one for all polls, not a fork per poll
            while folded(conn, topic) < args.events:
                time.sleep(0.5)
        live = args.events / (time.perf_counter() - t0)
        audit = projections(s)["audit"]
        with Progress(TextColumn("replaying audit"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                      console=console) as progress:  # fmt: skip
            task = progress.add_task("audit", total=None)
            last_batch = [0.0]

            def on_batch(n: int) -> None:
                progress.advance(task, n)
                last_batch[0] = time.perf_counter()

            t0 = time.perf_counter()
            result = rebuild(audit, s.require_kafka(), db, s.topics, on_total=lambda n: progress.update(task, total=n),
                             on_batch=on_batch)  # fmt: skip
            took, fold = time.perf_counter() - t0, last_batch[0] - t0
        print(f"machine                 {cpu_model()}")
        print(f"log written             {args.events:,} accepted episodes at {written:,.0f} records/s")
        print(f"live audit projection   {live:,.0f} events/s (from the end of writing)")
        rate = result.records / took
        print(f"replay of audit         {result.records:,} events in {took:.1f} s: {rate:,.0f} events/s "
              f"(fold, digest of both, swap)")  # fmt: skip
        print(f"  of which the fold     {fold:.1f} s: {result.records / fold:,.0f} events/s (the rest: two digests of "
              f"{result.records:,} rows and the swap into the live tables)")  # fmt: skip
        print(f"digests                 {'equal' if result.equal else 'DIFFERENT'} ({result.rebuilt_digest[:16]})")
        return 0 if result.equal else 1
