"""``hivemem bench governance``: votes/s through gate and governance to decisions, and
proposal->decision latency for a 5-claw vote, on the real parts.

Starts its own Kafka + Postgres + services in a temporary HIVEMEM_HOME, then:
1. throughput: 5 active claws, ``--proposals`` proposals published first; then every claw
   votes on every proposal as fast as the producers go. Timed from the first vote to the
   moment the governance processor has folded every vote and published every decision.
   (The 3rd YES of 5 decides; the 4th and 5th are refused as PROPOSAL_CLOSED: verdicts too.)
2. latency: ``--rounds`` times, one proposal and five votes; wall time from publishing the
   proposal to the decision record arriving at a consumer of the decision topic.
"""

from __future__ import annotations

import argparse
import os
import signal
import threading
import time
import uuid
from pathlib import Path

import psycopg
from confluent_kafka import Consumer, Producer
from rich.console import Console

from bench import BENCHES
from bench.cpu import CpuSample, cpu_model, python_speed, report
from bench.pipeline import pct, produce_waiting, spy
from bench.replay import timed_replay
from bench.temp_stack import running_stack, stack_pids
from contracts.avro import decode_envelope, encode_envelope
from contracts.models import DecisionPayload
from contracts.topics import partition_key
from hivemem.demo import claw_client
from hivemem.settings import Settings
from producers.claw_client import ClawClient, producer_config

TENANT = "acme"
CLAWS = [f"voter-{i}" for i in range(5)]


def proposal_body(c: ClawClient, pid: str) -> dict[str, object]:
    return {"proposalId": pid, "factKey": pid, "statement": "bench", "proposer": c.claw_id,
            "deadline": int(time.time() * 1000) + 600_000}  # fmt: skip


def heartbeat(claws: list[ClawClient]) -> None:
    for c in claws:
        c.heartbeat()


def progress(conn: psycopg.Connection[tuple[object, ...]]) -> tuple[int, int]:
    """(accepted votes the governance processor has folded, decision records the read model has folded): two
    index lookups of stored offsets. Counting the decisions table instead, 20 times a second, read every row
    of a table the warm-up fills, and charged that to Postgres."""
    folded = conn.execute(
        "SELECT coalesce(sum(next_offset), 0) FROM hivemem.projection_offsets "
        "WHERE consumer = 'governance-processor' AND topic LIKE '%accepted.vote'"
    ).fetchone()
    decided = conn.execute(
        "SELECT coalesce(sum(next_offset), 0) FROM hivemem.projection_offsets "
        "WHERE consumer = 'governance' AND topic LIKE '%.decision'"
    ).fetchone()
    return int(str(folded[0])) if folded else 0, int(str(decided[0])) if decided else 0


def throughput(settings: Settings, n_props: int, pids_of: dict[str, int] | None = None,
               profile: Path | None = None) -> tuple[int, float, dict[str, float]]:  # fmt: skip
    # One connection for the polling (a connection per poll costs Postgres a fork each time) and one
    # producer for the five claws (five would each send a fifth of the votes, in smaller batches).
    db = psycopg.connect(settings.require_database(), autocommit=True)
    shared = Producer(producer_config(settings.require_kafka()))
    claws = [claw_client(settings, TENANT, n, producer=shared) for n in CLAWS]
    heartbeat(claws)
    pids = [f"tp-{uuid.uuid4().hex[:10]}" for _ in range(n_props)]
    for pid in pids:
        claws[0].publish_envelope_async(claws[0].build("proposal", proposal_body(claws[0], pid)), lambda t, e: None)
    claws[0].flush()
    votes0, decisions0 = progress(db)
    votes = [c.build("vote", {"proposalId": pid, "vote": "YES"}) for pid in pids for c in claws]
    # Signed and encoded before the clock starts, as in bench pipeline: claws do that on their own machines
    # (encoding them in the loop cost this process 17 us of the two cores' time per vote).
    topic = settings.topics.inbound("vote")
    wire = [(partition_key(TENANT, env.aggregate), encode_envelope(env)) for env in votes]
    spies = spy(profile, pids_of or {}, ("gate", "governance", "projectors")) if profile is not None else []
    before = CpuSample.take(pids_of or {})
    t0 = time.perf_counter()
    last_beat = time.monotonic()
    for key, value in wire:
        produce_waiting(shared, topic, value, key=key)
        if time.monotonic() - last_beat > 5:  # stay in the quorum basis during long runs
            heartbeat(claws)
            last_beat = time.monotonic()
    shared.flush()
    while progress(db) < (votes0 + len(votes), decisions0 + n_props):
        time.sleep(0.05)
    rate = len(votes) / (time.perf_counter() - t0)
    spent = CpuSample.take(pids_of or {}).since(before)
    row = db.execute("SELECT count(*) FROM governance.decisions WHERE tenant = %s AND proposal_id = ANY(%s)",
                     (TENANT, pids)).fetchone()  # fmt: skip
    if row is None or int(str(row[0])) != n_props:  # after the clock: one decision per proposal in the read model
        raise SystemExit(f"bench governance: {row[0] if row else 0} decisions for {n_props:,} proposals")
    for p in spies:
        p.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
        p.wait(60)
    db.close()
    return len(votes), rate, spent


def latency(settings: Settings, rounds: int) -> list[float]:
    claws = [claw_client(settings, TENANT, n) for n in CLAWS]
    arrived: dict[str, float] = {}
    ready, stop = threading.Event(), threading.Event()

    def tail() -> None:
        c = Consumer({"bootstrap.servers": settings.require_kafka(), "group.id": f"bench-{uuid.uuid4().hex}",
                      "auto.offset.reset": "latest"})  # fmt: skip
        c.subscribe([settings.topics.inbound("decision")], on_assign=lambda *_: ready.set())
        while not stop.is_set():
            # poll, not consume(n, t): consume waits for n records or t, adding up to t to each figure.
            m = c.poll(0.05)
            if m is not None and m.error() is None:
                p = decode_envelope(m.value() or b"").payload
                if isinstance(p, DecisionPayload):
                    arrived.setdefault(p.proposal_id, time.perf_counter())
        c.close()

    t = threading.Thread(target=tail, daemon=True)
    t.start()
    ready.wait(30)
    time.sleep(1.0)
    out = []
    for _ in range(rounds):
        heartbeat(claws)
        pid = f"lat-{uuid.uuid4().hex[:10]}"
        t0 = time.perf_counter()
        claws[0].publish_envelope_async(claws[0].build("proposal", proposal_body(claws[0], pid)), lambda t, e: None)
        for c in claws:
            c.publish_envelope_async(c.build("vote", {"proposalId": pid, "vote": "YES"}), lambda t, e: None)
        for c in claws:
            c.flush()
        deadline = time.monotonic() + 30
        while pid not in arrived and time.monotonic() < deadline:
            time.sleep(0.002)
        if pid in arrived:
            out.append((arrived[pid] - t0) * 1000)
    stop.set()
    t.join(5)
    return sorted(out)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="hivemem bench governance", description=BENCHES["governance"])
    # 50,000 votes: a 10 s phase, steadier than 2 s
    ap.add_argument("--proposals", type=int, default=10000, help="proposals voted on in the throughput phase")
    ap.add_argument("--rounds", type=int, default=100, help="5-claw votes timed for latency")
    ap.add_argument("--warmup", type=float, default=60.0,
                    help="seconds of voting rounds first (a fresh broker's JIT compiles for a minute)")  # fmt: skip
    ap.add_argument("--profile", type=Path, default=None,
                    help="record gate, governance and projectors with py-spy into DIR")  # fmt: skip
    ap.add_argument("--no-replay", dest="replay", action="store_false",
                    help="skip the rebuild of the governance read model from the run's log at the end")  # fmt: skip
    args = ap.parse_args(argv)
    # The measured path alone (no CAML, KMMS, KMP or their models on the same cores).
    with running_stack(services=["gate", "governance", "projectors"]) as stack:
        settings = stack.settings
        pids = {**stack_pids(stack), "bench (producer)": os.getpid()}
        # Warm-up: every process, and the broker's JIT, as in bench pipeline. After only 1,000 proposals, perf
        # put 10 % of the machine's CPU in the broker's compiler threads during the measured phase.
        t0 = time.monotonic()
        throughput(settings, 1000)
        while time.monotonic() - t0 < args.warmup:
            throughput(settings, 2000)
        n, rate, spent = throughput(settings, args.proposals, pids, args.profile)
        lat = latency(settings, args.rounds)
        print(f"machine                          {cpu_model()}, {os.cpu_count()} cores; {python_speed()}")
        print(f"votes through gate + governance: {rate:10,.0f} votes/s  ({n:,} votes, {args.proposals:,} decisions)")
        print(f"CPU during the throughput phase ({n:,} votes, {n / rate:.1f} s; per vote):")
        print("\n".join(report(spent, n, n / rate)))
        print(f"proposal -> decision, 5-claw vote (n={len(lat)}/{args.rounds}): p50 {pct(lat, 0.5):.1f} ms  "
              f"p95 {pct(lat, 0.95):.1f} ms  p99 {pct(lat, 0.99):.1f} ms")  # fmt: skip
        if args.profile is not None:
            print(f"py-spy profiles (open in https://www.speedscope.app): {args.profile}")
        if args.replay:  # every vote, proposal, decision, fact and refusal of the run, warm-up included
            print(timed_replay(settings, "governance", Console(stderr=True)))
        return 0 if len(lat) == args.rounds else 1
