"""The one stream runtime, on real Kafka and Postgres: every record gets exactly one verdict.

The first tests run a small processor of their own on ``StreamRuntime`` (the runtime is the
unit under test; Kafka and Postgres are real). The rest drive the gate of the session stack
through the real path with the inputs that used to lose whole batches.
"""

from __future__ import annotations

import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from contracts.avro import decode_rejection, encode_envelope, encode_record, registry
from contracts.topics import partition_key
from governance.signing import sign_envelope
from hivemem.stack import Stack
from streams.kafka import high_watermarks
from streams.offsets import Conn, stored_offsets
from streams.processor import Failure
from streams.records import OUT_HEADER, SRC_HEADER, LogRecord, OutRecord
from streams.runtime import StreamRuntime
from tests.conftest import wait_until
from tests.helpers import episode
from tests.integration.support import client, owner_db

pytestmark = pytest.mark.integration


class Folder:
    """Folds each record into ``rt_test.folded`` and echoes it; a value starting ``poison``
    makes Postgres itself refuse the row (a NUL in text), as the gate's NUL key once did."""

    def __init__(self, name: str, topic: str, out: str) -> None:
        self.name, self.topic, self.out = name, topic, out
        self.conn: Conn | None = None
        self.opened = 0

    def input_topics(self) -> list[str]:
        return [self.topic]

    def open(self, conn: Conn) -> None:
        self.conn = conn
        self.opened += 1

    def process(self, records: Sequence[LogRecord], now_ms: int) -> list[OutRecord]:
        assert self.conn is not None
        for r in records:
            value = r.value or b""
            tag = "bad\x00" if value.startswith(b"poison") else value.decode()
            self.conn.execute("INSERT INTO rt_test.folded (processor, pos, tag) VALUES (%s, %s, %s)",
                              (self.name, str(r.position), tag))  # fmt: skip
        return [OutRecord(self.out, 0, None, b"OK:" + (r.value or b"")) for r in records]

    def refuse(self, failure: Failure) -> list[OutRecord]:
        return [OutRecord(self.out, 0, None, f"REFUSED:{failure.reference}".encode())]


@pytest.fixture()
def topics(stack: Stack) -> Iterator[tuple[str, str]]:
    name = f"rt-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": stack.settings.require_kafka()})
    for fut in admin.create_topics([NewTopic(name, 1, 1), NewTopic(f"{name}-out", 1, 1)]).values():
        fut.result()
    with owner_db(stack) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS rt_test")
        conn.execute("CREATE TABLE IF NOT EXISTS rt_test.folded (processor text, pos text, tag text, "
                     "PRIMARY KEY (processor, pos))")  # fmt: skip
    yield name, f"{name}-out"


def _produce(stack: Stack, topic: str, values: list[bytes], during: object = None) -> None:
    p = Producer({"bootstrap.servers": stack.settings.require_kafka(), "linger.ms": 5})
    for i, v in enumerate(values):
        p.produce(topic, v)
        if during is not None and i == len(values) // 3:
            p.flush(30)
            during()  # type: ignore[operator]
        if i % 200 == 0:
            p.poll(0)
    assert p.flush(30) == 0


def _raw(v: str | bytes | None) -> bytes:
    return v.encode() if isinstance(v, str) else (v or b"")


def _read_all(stack: Stack, topic: str, last: int | None = None) -> list[tuple[bytes, dict[str, bytes]]]:
    """Every record of ``topic`` (or the ``last`` of each partition): value and headers."""
    end = high_watermarks(stack.settings.require_kafka(), [topic])
    c = Consumer({"bootstrap.servers": stack.settings.require_kafka(), "group.id": f"t-{uuid.uuid4()}",
                  "fetch.message.max.bytes": 8_000_000})  # fmt: skip
    start = {tp: 0 if last is None else max(0, e - last) for tp, e in end.items()}
    c.assign([TopicPartition(t, p, start[(t, p)]) for (t, p) in end])
    want = sum(end.values()) - sum(start.values())
    out: list[tuple[bytes, dict[str, bytes]]] = []
    deadline = time.monotonic() + 60
    while len(out) < want and time.monotonic() < deadline:
        for m in c.consume(500, timeout=0.5):
            if m.error() is None:
                out.append((m.value() or b"", {str(h[0]): _raw(h[1]) for h in m.headers() or []}))
    c.close()
    return out


def _run(stack: Stack, processor: Folder) -> tuple[StreamRuntime, threading.Event, threading.Thread]:
    rt = StreamRuntime(processor, stack.settings.require_kafka(), stack.settings.require_database(), batch_size=200)
    stop = threading.Event()
    t = threading.Thread(target=rt.run, args=(stop,), daemon=True)
    t.start()
    return rt, stop, t


def _processed(stack: Stack, name: str) -> int:
    with owner_db(stack) as conn:
        return sum(stored_offsets(conn, name).values())


def test_a_record_that_fails_is_refused_and_its_batch_mates_go_on(stack: Stack, topics: tuple[str, str]) -> None:
    topic, out = topics
    name = f"folder-{uuid.uuid4().hex[:6]}"
    values = [b"poison" if i in (7, 150, 299) else f"v{i}".encode() for i in range(300)]
    _produce(stack, topic, values)
    _, stop, t = _run(stack, Folder(name, topic, out))
    try:
        wait_until(lambda: _processed(stack, name) == 300, what="300 records processed")
        wait_until(lambda: len(_read_all(stack, out)) >= 300, what="300 outputs")
    finally:
        stop.set()
        t.join(15)
    assert not t.is_alive()
    with owner_db(stack) as conn:
        folded = conn.execute("SELECT count(*) FROM rt_test.folded WHERE processor = %s", (name,)).fetchone()
        failures = conn.execute("SELECT \"offset\", reference FROM hivemem.processing_failures WHERE processor = %s "
                                "ORDER BY 1", (name,)).fetchall()  # fmt: skip
        progress = conn.execute("SELECT state, records, refused FROM hivemem.processor_progress WHERE processor = %s",
                                (name,)).fetchone()  # fmt: skip
    assert folded is not None and folded[0] == 297
    assert [f[0] for f in failures] == [7, 150, 299]
    outputs = _read_all(stack, out)
    assert len(outputs) == 300  # one verdict each, none doubled
    refusals = sorted(v for v, _ in outputs if v.startswith(b"REFUSED:"))
    assert refusals == sorted(f"REFUSED:{f[1]}".encode() for f in failures)
    assert len({h[OUT_HEADER] for _, h in outputs}) == 300
    assert progress == ("stopped", 300, 3)


def test_a_database_blip_stops_the_loop_and_it_resumes_without_loss(stack: Stack, topics: tuple[str, str]) -> None:
    topic, out = topics
    name = f"folder-{uuid.uuid4().hex[:6]}"
    folder = Folder(name, topic, out)
    _, stop, t = _run(stack, folder)

    def blip() -> None:
        with owner_db(stack) as conn:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                         "WHERE datname = current_database() AND pid <> pg_backend_pid()")  # fmt: skip

    try:
        # Connected first: a blip before the first connection would not be a blip the loop survives.
        wait_until(lambda: folder.opened >= 1, what="the folder connected")
        _produce(stack, topic, [f"v{i}".encode() for i in range(1500)], during=blip)
        wait_until(lambda: _processed(stack, name) == 1500, timeout=120, what="1500 records processed")
        wait_until(lambda: len(_read_all(stack, out)) >= 1500, what="1500 outputs")
    finally:
        stop.set()
        t.join(15)
    assert folder.opened >= 2  # it did lose its connection and came back
    outputs = _read_all(stack, out)
    assert sorted(v for v, _ in outputs) == sorted(f"OK:v{i}".encode() for i in range(1500))


# --- the gate, through the real path ---------------------------------------------------------


def _verdicts(stack: Stack, positions: list[tuple[str, int, int]]) -> dict[tuple[str, int, int], str] | None:
    with owner_db(stack) as conn:
        rows = conn.execute(
            "SELECT source_topic, source_partition, source_offset, coalesce(reason_code, outcome) FROM audit.events "
            "JOIN unnest(%s::text[], %s::int[], %s::bigint[]) AS w(t, p, o) "
            "ON source_topic = w.t AND source_partition = w.p AND source_offset = w.o",
            ([p[0] for p in positions], [p[1] for p in positions], [p[2] for p in positions]),
        ).fetchall()
    got = {(str(r[0]), int(str(r[1])), int(str(r[2]))): str(r[3]) for r in rows}
    return got if len(got) == len(positions) else None


def _send_raw(stack: Stack, items: Sequence[tuple[str, bytes | None, bytes]]) -> list[tuple[str, int, int]]:
    """Produce hand-made records (up to 1 MB); return where each landed, in order."""
    p = Producer({"bootstrap.servers": stack.settings.require_kafka(), "message.max.bytes": 2_000_000,
                  "linger.ms": 5})  # fmt: skip
    where: dict[int, tuple[str, int, int]] = {}
    for i, (topic, key, value) in enumerate(items):

        def done(err: object, msg: object, i: int = i) -> None:
            assert err is None, err
            where[i] = (msg.topic(), msg.partition(), msg.offset())  # type: ignore[attr-defined]

        p.produce(topic, value, key, on_delivery=done)
        p.poll(0)
    assert p.flush(60) == 0
    return [where[i] for i in range(len(items))]


def test_nul_in_an_idempotency_key_within_a_burst_costs_no_other_record(stack: Stack) -> None:
    c = client(stack)
    topic = stack.settings.topics.inbound("episode")
    items = []
    for i in range(400):
        env = c.build("episode", episode())
        if i == 200:
            env = sign_envelope(env.model_copy(update={"idempotency_key": "k\x00" + env.event_id}), c.signer)
        items.append((topic, partition_key(env.tenant, env.aggregate), encode_envelope(env)))
    positions = _send_raw(stack, items)
    got = wait_until(lambda: _verdicts(stack, positions), what="400 verdicts")
    assert got[positions[200]] == "INVALID_FIELD"
    assert Counter(got.values()) == {"ACCEPTED": 399, "INVALID_FIELD": 1}


def test_an_unsigned_record_just_under_1_mb_is_refused_and_the_rejection_fits(stack: Stack) -> None:
    c = client(stack)
    topic = stack.settings.topics.inbound("episode")
    good = [c.build("episode", episode()) for _ in range(20)]
    big = c.build("episode", episode()).to_wire()
    big["payload"]["content"] = "x" * 1_000_000  # over the field limit too; refused before that
    big["signature"] = b""
    big_bytes = encode_record(registry().latest("episode"), big)
    assert 1_000_000 < len(big_bytes) < 1_048_000
    items = [(topic, partition_key(e.tenant, e.aggregate), encode_envelope(e)) for e in good[:10]]
    items.append((topic, partition_key("acme", "about:checkout"), big_bytes))
    items += [(topic, partition_key(e.tenant, e.aggregate), encode_envelope(e)) for e in good[10:]]
    positions = _send_raw(stack, items)
    got = wait_until(lambda: _verdicts(stack, positions), what="21 verdicts")
    assert got[positions[10]] == "MISSING_FIELD"
    assert Counter(got.values()) == {"ACCEPTED": 20, "MISSING_FIELD": 1}
    rejected = [v for v, h in _read_all(stack, stack.settings.topics.rejected, last=2000)
                if h.get(SRC_HEADER) == "{}:{}:{}".format(*positions[10]).encode()]  # fmt: skip
    assert len(rejected) == 1
    rej = decode_rejection(rejected[0])
    assert rej.original_size == len(big_bytes) and len(rej.original) == 64 * 1024


def _publish_burst(stack: Stack, n: int, during: object) -> list[tuple[str, int, int]]:
    c = client(stack)
    topic = stack.settings.topics.inbound("capabilities")
    items = []
    for i in range(n):
        env = c.build("capabilities", {"capabilities": [f"cap.{i}"]})
        items.append((topic, partition_key(env.tenant, env.aggregate), encode_envelope(env)))
    first = _send_raw(stack, items[: n // 3])
    during()  # type: ignore[operator]
    return first + _send_raw(stack, items[n // 3 :])


def test_postgres_connections_terminated_under_load_lose_nothing(stack: Stack) -> None:
    def terminate_all() -> None:
        with owner_db(stack) as conn:
            n = conn.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
                             "datname = current_database() AND pid <> pg_backend_pid()").fetchone()  # fmt: skip
        assert n is not None and int(str(n[0])) >= 3  # gate, governance, projectors at least

    positions = _publish_burst(stack, 1500, terminate_all)
    got = wait_until(lambda: _verdicts(stack, positions), timeout=180, what="1500 verdicts after the blip")
    assert Counter(got.values()) == {"ACCEPTED": 1500}


def test_gate_sigkilled_mid_stream_emits_every_verdict_exactly_once(stack: Stack) -> None:
    names = stack.settings.topics
    gate = stack.services["gate"]
    before = high_watermarks(stack.settings.require_kafka(), [names.accepted("capabilities")])

    def kill() -> None:
        time.sleep(0.2)
        assert gate.proc is not None
        gate.proc.send_signal(signal.SIGKILL)
        gate.proc.wait()
        gate.start()

    positions = _publish_burst(stack, 2000, kill)
    got = wait_until(lambda: _verdicts(stack, positions), timeout=180, what="2000 verdicts after the kill")
    assert Counter(got.values()) == {"ACCEPTED": 2000}
    # In Kafka too: each inbound record's accepted copy is there once (the outbox's recovery).
    after = high_watermarks(stack.settings.require_kafka(), [names.accepted("capabilities")])
    assert sum(after.values()) - sum(before.values()) == 2000
    c = Consumer({"bootstrap.servers": stack.settings.require_kafka(), "group.id": f"t-{uuid.uuid4()}"})
    c.assign([TopicPartition(t, p, before[(t, p)]) for (t, p) in after])
    srcs: Counter[bytes] = Counter()
    deadline = time.monotonic() + 60
    while sum(srcs.values()) < 2000 and time.monotonic() < deadline:
        for m in c.consume(500, timeout=0.5):
            if m.error() is None:
                srcs.update(_raw(h[1]) for h in m.headers() or [] if h[0] == SRC_HEADER)
    c.close()
    assert len(srcs) == 2000 and set(srcs.values()) == {1}


def test_readyz_fails_while_a_processor_is_down(stack: Stack) -> None:
    import httpx

    gov = stack.services["governance"]
    with httpx.Client(base_url=stack.api_url, timeout=30) as h:
        wait_until(lambda: h.get("/readyz").status_code == 200, what="ready")
        gov.stop()
        try:
            r = wait_until(lambda: (r := h.get("/readyz")).status_code == 503 and r, timeout=30, what="not ready")
            assert "governance-processor" in r.text
        finally:
            gov.start()
        wait_until(lambda: h.get("/readyz").status_code == 200, what="ready again")


def test_every_service_stops_within_seconds_while_the_broker_is_down(stack: Stack) -> None:
    assert stack.kafka is not None
    stack.kafka.stop()
    try:
        time.sleep(2)
        for name in ("gate", "governance", "projectors"):
            svc = stack.services[name]
            assert svc.proc is not None
            t0 = time.monotonic()
            svc.proc.terminate()
            svc.proc.wait(30)
            assert time.monotonic() - t0 < 8, name
    finally:
        stack.kafka.start()
        for name in ("gate", "governance", "projectors"):
            stack.services[name].start()
    with owner_db(stack) as conn:

        def running() -> bool:
            row = conn.execute("SELECT count(*) FROM hivemem.processor_progress WHERE state = 'running' "
                               "AND heartbeat_at > now() - interval '5 seconds'").fetchone()  # fmt: skip
            return row is not None and int(str(row[0])) >= 5

        wait_until(running, timeout=60, what="processors running again")
