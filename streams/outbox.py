"""Processor outputs on their way to Kafka: ``hivemem.outbox`` and ``hivemem.publish_marks``.

Outputs are written in the same transaction as the effects and input offsets that produced
them, sent after that transaction commits, and deleted once Kafka has acknowledged them.
Each carries ``hm-out: <processor>:<seq>``. ``publish_marks`` holds, per output partition,
an offset at or below every record of the current publish round, so a restarted processor
can read its partitions from there and learn which outbox rows already reached Kafka.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from confluent_kafka import Consumer, TopicPartition

from streams.kafka import TP, consumer_config
from streams.offsets import Conn
from streams.records import OUT_HEADER, OutRecord


class PublishFailed(RuntimeError):
    """Kafka did not acknowledge every output: not the records' fault, so the loop stops and retries."""


@dataclass(frozen=True)
class OutboxRow:
    seq: int
    topic: str
    partition: int
    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...]


def out_id(processor: str, seq: int) -> bytes:
    return f"{processor}:{seq}".encode()


def _pack(headers: tuple[tuple[str, bytes], ...]) -> list[bytes]:
    # Header names are ASCII without '='; stored as "name=value" byte strings.
    return [k.encode() + b"=" + v for k, v in headers]


def _unpack(packed: Sequence[bytes]) -> tuple[tuple[str, bytes], ...]:
    out = []
    for item in packed:
        name, _, value = bytes(item).partition(b"=")
        out.append((name.decode(), value))
    return tuple(out)


def add(conn: Conn, processor: str, outputs: Sequence[OutRecord]) -> list[OutboxRow]:
    """Write outputs in one COPY (seqs drawn first, so the caller keeps the rows and need not
    read them back to publish them). The sequence hands each session blocks of 1,000 (migration 22):
    an owner's seqs increase, since it writes from one session at a time and a new session's block
    starts above every value handed out before."""
    if not outputs:
        return []
    seqs = [int(str(r[0])) for r in conn.execute(_next_seqs(conn), (len(outputs),)).fetchall()]
    rows = [OutboxRow(seq, o.topic, o.partition, o.key, o.value, o.headers)
            for seq, o in zip(seqs, outputs, strict=True)]  # fmt: skip
    with conn.cursor() as cur, cur.copy(_COPY) as copy:
        copy.set_types(["text", "int8", "text", "int4", "bytea", "bytea", "bytea[]"])
        for r in rows:
            copy.write_row((processor, r.seq, r.topic, r.partition, r.key, r.value, _pack(r.headers)))
    return rows


# nextval of a constant regclass: resolved when the statement is planned (prepared after five runs). Named
# through pg_get_serial_sequence in the select list, the sequence was looked up again for every row (3 us a
# seq in pg_stat_statements). The name is read once per process; bigserial named it when the table was made.
_NEXT_SEQS = "SELECT nextval({}::regclass) FROM generate_series(1, %s)"
_sequence: list[str] = []


def _next_seqs(conn: Conn) -> str:
    if not _sequence:
        row = conn.execute("SELECT quote_literal(pg_get_serial_sequence('hivemem.outbox', 'seq'))").fetchone()
        assert row is not None
        _sequence.append(str(row[0]))
    return _NEXT_SEQS.format(_sequence[0])


_COPY = "COPY hivemem.outbox (processor, seq, topic, partition, key, value, headers) FROM STDIN (FORMAT BINARY)"


UNSENT_LIMIT = 10_000  # rows per publish round read from the outbox


def unsent(conn: Conn, processor: str, limit: int = UNSENT_LIMIT) -> list[OutboxRow]:
    rows = conn.execute("SELECT seq, topic, partition, key, value, headers FROM hivemem.outbox "
                        "WHERE processor = %s ORDER BY seq LIMIT %s", (processor, limit)).fetchall()  # fmt: skip
    return [OutboxRow(int(str(r[0])), str(r[1]), int(str(r[2])), r[3], r[4], _unpack(r[5]))  # type: ignore[arg-type]
            for r in rows]  # fmt: skip


def delete(conn: Conn, processor: str, seqs: list[int]) -> None:
    # The seqs travel as one comma-joined string: psycopg dumps a list element by element in Python.
    conn.execute("DELETE FROM hivemem.outbox WHERE processor = %s AND seq = ANY(string_to_array(%s, ',')::bigint[])",
                 (processor, ",".join(map(str, seqs))))  # fmt: skip


def get_marks(conn: Conn, processor: str) -> dict[TP, int]:
    rows = conn.execute("SELECT topic, partition, from_offset FROM hivemem.publish_marks WHERE processor = %s",
                        (processor,)).fetchall()  # fmt: skip
    return {(str(r[0]), int(str(r[1]))): int(str(r[2])) for r in rows}


def set_marks(conn: Conn, processor: str, marks: dict[TP, int]) -> None:
    if not marks:
        return
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO hivemem.publish_marks (processor, topic, partition, from_offset) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (processor, topic, partition) DO UPDATE SET from_offset = excluded.from_offset",
            [(processor, t, p, o) for (t, p), o in marks.items()],
        )


def scan_sent(bootstrap: str, processor: str, start: dict[TP, int], ends: dict[TP, int],
              stop: Callable[[], bool], timeout: float = 120.0) -> set[int]:  # fmt: skip
    """Outbox seqs of ``processor`` found in the given partitions between ``start`` and ``ends``."""
    todo = {tp: off for tp, off in start.items() if ends.get(tp, 0) > off}
    if not todo:
        return set()
    prefix = f"{processor}:".encode()
    consumer = Consumer({**consumer_config(bootstrap, f"{processor}-recovery"), "enable.partition.eof": False})
    found: set[int] = set()
    try:
        consumer.assign([TopicPartition(t, p, off) for (t, p), off in todo.items()])
        pending = dict(todo)
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline and not stop():
            for m in consumer.consume(1000, timeout=0.5):
                if m.error() is not None:
                    continue
                for h in m.headers() or []:
                    raw = h[1].encode() if isinstance(h[1], str) else h[1]
                    if h[0] == OUT_HEADER and raw and raw.startswith(prefix):
                        found.add(int(raw[len(prefix) :]))
                tp = (str(m.topic()), int(m.partition() or 0))
                if int(m.offset() or 0) + 1 >= ends[tp]:
                    pending.pop(tp, None)
        if pending:
            raise PublishFailed(f"could not read back output partitions {sorted(pending)}")
    finally:
        consumer.close()
    return found
