"""The gate split over two instances by Kafka's consumer group (streams.group), one of them SIGKILLed
mid-stream.

Two gate processes (``HIVEMEM_INSTANCE`` 0 and 1) share the gate's input partitions; the governance
processor and the audit, claws and governance projectors run as usual, against this module's own broker
and Postgres (a split gate cannot run beside the session's unsplit one). 6,000 signed envelopes go in,
proposals and votes among them; gate 1 is SIGKILLed a third of the way through and stays dead while gate
0 takes its partitions over (after the group's session timeout) and publishes what gate 1 had committed
but not sent; then gate 1 comes back and takes a share again. Then: every acknowledged envelope has
exactly one verdict, sent once, one audit row; both instances did part of the work; the governance
outcome is complete; and each read model equals a clean replay of the log.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from contracts.positions import LogPosition
from hivemem.demo import claw_client
from hivemem.services import projections
from hivemem.stack import Stack
from producers.claw_client import producer_config
from projections.replay import rebuild
from streams.kafka import read_topics
from streams.records import OUT_HEADER, LogRecord
from tests.conftest import wait_until
from tests.integration.governance_support import mixed_stream
from tests.integration.split_support import sender, split_stack
from tests.integration.support import count, owner_db

pytestmark = pytest.mark.integration

TENANT = "acme"
N = 6_000
RATE = 600  # envelopes/s: 10 s in all
KILL_AT, RESTART_AT = N // 3, 2 * N // 3
PROPOSALS = 6
CLAWS = 5
READ_MODELS = ("audit", "claws", "governance")
CLAW_TYPES = ("presence", "capabilities", "proposal", "vote")


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    services: dict[str, tuple[list[str], str | None]] = {
        "gate-0": (["gate"], "0"), "gate-1": (["gate"], "1"), "governance": (["governance"], None),
        "projectors": (["projectors", *READ_MODELS], None)}  # fmt: skip
    with split_stack(Path(tmp_path_factory.mktemp("hm-split")), (TENANT,), services) as st:
        yield st


def _owners(records: list[LogRecord]) -> Counter[str]:
    """Verdicts by the outbox owner that sent them (``gate@0``, ``gate@1``)."""
    return Counter(sender(r) for r in records)


def test_two_gate_instances_split_the_partitions_and_survive_a_sigkill(split: Stack) -> None:
    s = split.settings
    bootstrap, names = s.require_kafka(), s.topics
    inbound = [names.inbound(t) for t in CLAW_TYPES]
    verdict_topics = [names.accepted(t) for t in CLAW_TYPES] + [names.rejected]
    gate0, gate1 = split.services["gate-0"], split.services["gate-1"]

    # Both instances hold a share of the partitions before anything is sent.
    wait_until(lambda: all("assigned" in (ln := _last_assignment(split, i)) and _partitions(ln) > 0 for i in (0, 1)),
               timeout=90, interval=0.5, what="both gates assigned partitions")  # fmt: skip
    share0 = _partitions(_last_assignment(split, 0))

    trace = f"split-{uuid.uuid4().hex[:8]}"
    producer = Producer(producer_config(bootstrap))
    claws = [claw_client(s, TENANT, f"claw-{i}", producer) for i in range(CLAWS)]
    acked: list[LogPosition] = []
    errors: list[str] = []

    def on_done(pos: LogPosition | None, err: str | None) -> None:
        (acked.append(pos) if pos is not None else errors.append(str(err)))  # type: ignore[func-returns-value]

    at_kill, restarted = threading.Event(), threading.Event()

    def publish() -> None:
        start = time.monotonic()
        for i, (claw, kind, payload) in enumerate(mixed_stream(trace, N, PROPOSALS, CLAWS, 300, 900)):
            if i == KILL_AT:
                at_kill.set()
            if i == RESTART_AT:
                while not restarted.wait(0.1):
                    producer.poll(0)
            c = claws[claw]
            c.publish_envelope_async(c.build(kind, payload, trace_id=trace), on_done)
            if i % 50 == 0:
                time.sleep(max(0.0, start + i / RATE - time.monotonic()))
        assert producer.flush(60) == 0

    publisher = threading.Thread(target=publish, daemon=True)
    publisher.start()
    assert at_kill.wait(60)
    gate1.kill()  # SIGKILL, mid-stream
    # Gate 0 alone: the group gives it gate 1's partitions once gate 1's session times out (6 s).
    try:
        wait_until(lambda: "assigned" in (ln := _last_assignment(split, 0)) and _partitions(ln) > share0
                   and _audited(split, inbound) >= KILL_AT + 500, timeout=60, interval=0.5,
                   what="gate 0 carrying on alone, with gate 1's partitions")  # fmt: skip
    except AssertionError as e:
        raise AssertionError(f"{e}\n{_report(split, inbound)}") from None
    finally:
        if not gate1.alive():
            gate1.start()  # back: the group splits the partitions again
        restarted.set()
    publisher.join()
    assert errors == [] and len(acked) == N and len(set(acked)) == N

    wait_until(lambda: _audited(split, inbound) >= N, timeout=120, interval=1, what=f"{N} audit rows")
    facts = "SELECT count(*) FROM governance.facts WHERE tenant = %s"
    wait_until(lambda: count(split, facts, TENANT) >= PROPOSALS, timeout=120, interval=1, what="the facts")
    assert gate0.alive() and gate1.alive()

    # Every acknowledged envelope: one verdict (an acceptance), sent once, by one of the two instances.
    verdicts = read_topics(bootstrap, verdict_topics)  # this module's own log: all of them are this test's
    assert Counter(r.source() for r in verdicts) == Counter(acked)
    assert [r for r in verdicts if r.topic == names.rejected] == []
    ids = Counter(r.header(OUT_HEADER) for r in verdicts)
    assert None not in ids and max(ids.values()) == 1
    by_owner = _owners(verdicts)
    assert set(by_owner) == {"gate@0", "gate@1"} and min(by_owner.values()) > N // 10, by_owner
    with owner_db(split) as conn:
        row = conn.execute("SELECT count(*), count(DISTINCT event_id) FROM audit.events WHERE source_topic = ANY(%s)",
                           (inbound,)).fetchone()  # fmt: skip
        left = conn.execute("SELECT count(*) FROM hivemem.outbox WHERE processor LIKE 'gate%'").fetchone()
    assert row == (N, N)
    assert left == (0,)  # gate 1's unsent rows were published (adopted, or by itself on its return)

    models = projections(s)
    for name in READ_MODELS:
        assert rebuild(models[name], bootstrap, s.require_database(), names).equal, name


def _report(stack: Stack, inbound: list[str]) -> str:
    """What a stalled split needs to be understood: audit rows, the loops' progress, stored offsets against
    the log's ends, the outbox, the gates' rebalance lines."""
    from streams.kafka import high_watermarks

    lines = [f"audited {_audited(stack, inbound)}"]
    with owner_db(stack) as conn:
        lines += [f"progress {r}" for r in conn.execute("SELECT processor, state, lag FROM hivemem.processor_progress")]
        lines += [f"outbox {r}" for r in conn.execute("SELECT processor, count(*) FROM hivemem.outbox GROUP BY 1")]
        offsets = "SELECT topic, partition, next_offset FROM hivemem.projection_offsets WHERE consumer = 'gate'"
        stored = {(str(t), int(str(p))): int(str(o)) for t, p, o in conn.execute(offsets)}
    ends = high_watermarks(stack.settings.require_kafka(), inbound)
    lines += [f"gate behind on {tp}: stored {stored.get(tp)} end {end}" for tp, end in sorted(ends.items())
              if stored.get(tp, 0) < end]  # fmt: skip
    for i in (0, 1):
        log = stack.settings.home / "logs" / f"gate-{i}.log"
        if log.exists():
            lines += [ln[:200] for ln in log.read_text(errors="replace").splitlines() if " hivemem" in ln][-8:]
    return "\n".join(lines)


def _audited(stack: Stack, inbound: list[str]) -> int:
    return count(stack, "SELECT count(*) FROM audit.events WHERE source_topic = ANY(%s)", inbound)


def _last_assignment(stack: Stack, i: int) -> str:
    log = stack.settings.home / "logs" / f"gate-{i}.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    lines = [ln for ln in text.splitlines() if f"gate@{i}: assigned" in ln or f"gate@{i}: revoked" in ln]
    return lines[-1] if lines else ""


def _partitions(line: str) -> int:
    return line.count("(")


def test_a_gone_instances_unsent_rows_are_published_once_under_its_name(split: Stack) -> None:
    """Rows committed by an instance that never comes back (``gate@gone``: no process holds its outbox lock)
    are adopted by a live instance when it next joins the group, published with the gone owner's ``hm-out``
    ids, and deleted; rows it had already sent (found by the recovery scan) are not sent again."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from streams import outbox
    from streams.records import OutRecord

    s = split.settings
    bootstrap, topic = s.require_kafka(), f"adopt-probe-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: its futures die with the handle
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    with owner_db(split) as conn, conn.transaction():
        rows = outbox.add(conn, "gate@gone", [OutRecord(topic, 0, b"k", f"row {i}".encode()) for i in range(5)])
        outbox.set_marks(conn, "gate@gone", {(topic, 0): 0})
    # One of them reached Kafka before "gate@gone" died: the recovery scan must find it, not send it again.
    sent = Producer(producer_config(bootstrap))
    sent.produce(
        topic, value=b"row 0", key=b"k", partition=0, headers=[(OUT_HEADER, outbox.out_id("gate@gone", rows[0].seq))]
    )
    assert sent.flush(30) == 0

    gate0 = split.services["gate-0"]
    gate0.stop()
    gate0.start()  # joining again: a live instance adopts what the gone one left
    gone = "SELECT count(*) FROM hivemem.outbox WHERE processor = 'gate@gone'"
    wait_until(lambda: count(split, gone) == 0, timeout=60, interval=0.5, what="gate@gone's rows adopted")
    on_log = read_topics(bootstrap, [topic])
    assert sorted(r.value or b"" for r in on_log) == sorted(f"row {i}".encode() for i in range(5))
    ids = sorted(r.header(OUT_HEADER) or b"" for r in on_log)
    assert ids == sorted(outbox.out_id("gate@gone", r.seq) for r in rows)  # each once, under the gone owner
    log = (s.home / "logs" / "gate-0.log").read_text(errors="replace")
    assert "published the outbox rows gate@gone left" in log
