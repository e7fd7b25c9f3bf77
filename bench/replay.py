"""``hivemem bench replay``: how fast a read model is rebuilt from the log (``hivemem replay``).

Starts a stack with the gate and the projectors in a temporary home, writes N accepted episode
records straight onto ``accepted.episode`` (as the gate would: the inbound position and log time
in headers; 1,000 distinct signed envelopes, each at many positions, so building them does not
dominate), waits for the live audit read model to fold them, then rebuilds it with the same code
``hivemem replay`` runs (progress bar and ETA), prints events/s and checks the digests are equal.
Default N: 1,000,000. ``--model kmms``: N records of the KMMS processors instead (bench/replay_kmms.py), and
then a second replay into the live model emptied, which moves every table and builds its indexes.
"""

from __future__ import annotations

import argparse
import time

import psycopg
from confluent_kafka import Producer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from bench import BENCHES
from bench.cpu import cpu_model
from bench.pipeline import produce_waiting
from bench.replay_kmms import write_kmms_log
from bench.temp_stack import running_stack
from contracts.avro import encode_envelope
from contracts.positions import LogPosition
from contracts.topics import partition_key
from hivemem.demo import claw_client
from hivemem.services import projections
from hivemem.settings import Settings
from projections.read_models import Projection
from projections.replay import ReplayResult, rebuild
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
    result, took, fold = _replay(projections(settings)[model], settings, console)
    return (f"replay of {model}: {result.records:,} events in {took:.1f} s = {result.records / took:,.0f} events/s "
            f"(fold alone {result.records / fold:,.0f}/s; then {result.timings()}); digests "
            f"{'equal' if result.equal else 'DIFFERENT'}")  # fmt: skip


def folded(conn: psycopg.Connection[tuple[object, ...]], consumer: str, topics: list[str]) -> int:
    row = conn.execute("SELECT coalesce(sum(next_offset), 0) FROM hivemem.projection_offsets "
                       "WHERE consumer = %s AND topic = ANY(%s)", (consumer, topics)).fetchone()  # fmt: skip
    return int(str(row[0])) if row else 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="hivemem bench replay", description=BENCHES["replay"])
    ap.add_argument("--events", type=int, default=1_000_000, help="records written to the log, then replayed")
    ap.add_argument("--model", choices=("audit", "kmms"), default="audit",
                    help="audit: N accepted episodes; kmms: N records of the KMMS processors (episodes, "
                         "enrichments, vectors, summaries, facts)")  # fmt: skip
    args = ap.parse_args(argv)
    console = Console()
    with running_stack(services=["gate", "projectors"]) as stack:
        s = stack.settings
        db = s.require_database()
        if args.model == "kmms":
            t0 = time.perf_counter()
            events = write_kmms_log(s, args.events, console)
            written, what, topics = events / (time.perf_counter() - t0), "KMMS records", s.topics.kmms_topics()
        else:
            events, what, topics = args.events, "accepted episodes", [s.topics.accepted("episode")]
            written = write_log(s, events, console)
        t0 = time.perf_counter()
        with psycopg.connect(db, autocommit=True) as conn:  # one for all polls, not a fork per poll
            while folded(conn, args.model, topics) < events:
                time.sleep(0.5)
        live = events / (time.perf_counter() - t0)
        model = projections(s)[args.model]
        result, took, fold = _replay(model, s, console)
        print(f"machine                 {cpu_model()}")
        print(f"log written             {events:,} {what} at {written:,.0f} records/s")
        print(f"live {args.model} projection   {live:,.0f} events/s (from the end of writing)")
        print(f"replay of {args.model}         {result.records:,} events in {took:.1f} s: "
              f"{result.records / took:,.0f} events/s (fold, digest of both, swap)")  # fmt: skip
        print(f"  of which the fold     {fold:.1f} s: {result.records / fold:,.0f} events/s")
        print(f"  then                  {result.timings()}")
        print(f"digests                 {'equal' if result.equal else 'DIFFERENT'} ({result.rebuilt_digest[:16]})")
        if not result.equal:
            print(result.describe())
            return 1
        # The live model lost (its tables emptied, its offsets kept): every table differs, so the swap moves
        # every row into the live tables and builds their indexes.
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute(f"TRUNCATE {', '.join(f'{model.name}.{t.table}' for t in model.tables)}")
        lost, took, _ = _replay(model, s, console)
        same = lost.rebuilt_digest == result.rebuilt_digest
        print(f"replay into an emptied live model: {lost.records / took:,.0f} events/s ({took:.1f} s); "
              f"{lost.timings()}")  # fmt: skip
        print(f"  rebuilt digest        {'the same' if same else 'DIFFERENT'} ({lost.rebuilt_digest[:16]})")
        return 0 if same else 1


def _replay(model: Projection, s: Settings, console: Console) -> tuple[ReplayResult, float, float]:
    """``hivemem replay`` of one model with its progress bar: the result, its seconds and the fold's."""
    with Progress(TextColumn(f"replaying {model.name}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=console) as progress:  # fmt: skip
        task = progress.add_task(model.name, total=None)
        last_batch = [0.0]

        def on_batch(n: int) -> None:
            progress.advance(task, n)
            last_batch[0] = time.perf_counter()

        t0 = time.perf_counter()
        result = rebuild(model, s.require_kafka(), s.require_database(), s.topics,
                         on_total=lambda n: progress.update(task, total=n), on_batch=on_batch)  # fmt: skip
        return result, time.perf_counter() - t0, max(last_batch[0] - t0, 1e-9)
