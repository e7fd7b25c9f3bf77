"""The projector framework: fold Kafka records into Postgres, exactly once in effect.

Commit protocol: the consumer is *assigned* its partitions at the offsets stored in
``hivemem.projection_offsets`` (Kafka's committed offsets play no part). Each batch is
folded in one Postgres transaction that also advances those stored offsets; records below
the stored offset are skipped. So a crash before the commit re-reads the batch, a crash
after it resumes past it, and a re-delivered record changes nothing. One projector per
read model holds an advisory lock, so a second copy waits as a standby. A record that a
fold cannot take is recorded in ``hivemem.projection_failures`` and skipped, never fatal.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import psycopg
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from contracts.topics import TopicNames
from projections.log_records import LogRecord
from projections.read_models import Projection

log = logging.getLogger("hivemem.projector")
TP = tuple[str, int]
BATCH = 1000


def consumer_config(bootstrap: str, name: str) -> dict[str, object]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": f"hivemem-projector-{name}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 5,
        "log_level": 3,
    }


def to_log_record(msg: object) -> LogRecord:
    m = msg  # confluent_kafka.Message
    headers = tuple((k, v or b"") for k, v in (m.headers() or []))  # type: ignore[attr-defined]
    return LogRecord(m.topic(), m.partition(), m.offset(), m.timestamp()[1], m.key(), m.value(), headers)  # type: ignore[attr-defined]


def stored_offsets(conn: psycopg.Connection[tuple[object, ...]], consumer: str) -> dict[TP, int]:
    """Next offset to fold, per (topic, partition), as recorded with the read model."""
    rows = conn.execute("SELECT topic, partition, next_offset FROM hivemem.projection_offsets "
                        "WHERE consumer = %s", (consumer,)).fetchall()  # fmt: skip
    return {(str(r[0]), int(str(r[1]))): int(str(r[2])) for r in rows}


def store_offsets(cur: psycopg.Cursor[tuple[object, ...]], consumer: str, records: list[LogRecord]) -> None:
    """Advance ``consumer``'s stored offsets past ``records``, in the caller's transaction."""
    ends: dict[TP, int] = {}
    for r in records:
        ends[(r.topic, r.partition)] = max(ends.get((r.topic, r.partition), 0), r.offset + 1)
    cur.executemany(
        "INSERT INTO hivemem.projection_offsets (consumer, topic, partition, next_offset) "
        "VALUES (%s, %s, %s, %s) ON CONFLICT (consumer, topic, partition) DO UPDATE SET "
        "next_offset = GREATEST(projection_offsets.next_offset, excluded.next_offset), "
        "updated_at = clock_timestamp()",
        [(consumer, t, p, o) for (t, p), o in ends.items()],
    )


def wait_advisory_lock(conn: psycopg.Connection[tuple[object, ...]], name: str, stop: threading.Event) -> bool:
    """Hold the session lock ``name`` (one active writer; copies wait as standbys) or stop."""
    while not stop.is_set():
        row = conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (name,)).fetchone()
        if row and row[0]:
            return True
        stop.wait(1.0)
    return False


class Projector:
    def __init__(
        self,
        projection: Projection,
        bootstrap: str,
        db_url: str,
        names: TopicNames,
        *,
        schema: str | None = None,
        consumer_name: str | None = None,
        exclusive: bool = True,
    ) -> None:
        self.projection = projection
        self.bootstrap = bootstrap
        self.db_url = db_url
        self.names = names
        self.schema = schema or projection.name
        self.consumer_name = consumer_name or projection.name
        self.exclusive = exclusive
        self.next: dict[TP, int] = {}
        self.folded = 0

    def _connect(self) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(self.db_url, autocommit=True, prepare_threshold=None)

    def _load_offsets(self, conn: psycopg.Connection[tuple[object, ...]]) -> dict[TP, int]:
        return stored_offsets(conn, self.consumer_name)

    def _partitions(self, consumer: Consumer) -> list[TP]:
        md = consumer.list_topics(timeout=10)
        tps: list[TP] = []
        for topic in self.projection.topics(self.names):
            t = md.topics.get(topic)
            if t is None or t.error is not None:
                raise RuntimeError(f"topic {topic} does not exist (run migrations/topic setup first)")
            tps += [(topic, p) for p in sorted(t.partitions)]
        return tps

    def _assign(self, consumer: Consumer, conn: psycopg.Connection[tuple[object, ...]]) -> None:
        stored = self._load_offsets(conn)
        tps = self._partitions(consumer)
        self.next = {tp: stored.get(tp, 0) for tp in tps}
        consumer.assign([TopicPartition(t, p, stored.get((t, p), OFFSET_BEGINNING)) for t, p in tps])

    def run(
        self,
        stop: threading.Event,
        until: dict[TP, int] | None = None,
        on_batch: Callable[[int], None] | None = None,
    ) -> None:
        """Fold until ``stop`` is set, or (``until`` given) until every partition reaches its end."""
        consumer = Consumer(consumer_config(self.bootstrap, self.consumer_name))
        conn: psycopg.Connection[tuple[object, ...]] | None = None
        try:
            while not stop.is_set():
                try:
                    if conn is None or conn.closed:
                        conn = self._connect()
                        if self.exclusive and not wait_advisory_lock(conn, f"projector:{self.consumer_name}", stop):
                            return
                        self._assign(consumer, conn)
                    if until is not None and all(self.next.get(tp, 0) >= end for tp, end in until.items()):
                        return
                    msgs = consumer.consume(BATCH, timeout=0.05)
                    records = [to_log_record(m) for m in msgs if m.error() is None]
                    for m in msgs:
                        if m.error() is not None:
                            log.warning("%s: consume error %s", self.consumer_name, m.error())
                    n = self._fold_batch(conn, records)
                    if on_batch is not None and records:
                        on_batch(n)
                except psycopg.OperationalError as exc:
                    log.warning("%s: database unavailable (%s); reconnecting", self.consumer_name, exc)
                    if conn is not None:
                        conn.close()
                    conn = None
                    stop.wait(1.0)
        finally:
            consumer.close()
            if conn is not None:
                conn.close()

    def _fold_batch(self, conn: psycopg.Connection[tuple[object, ...]], records: list[LogRecord]) -> int:
        fresh = [r for r in records if r.offset >= self.next.get((r.topic, r.partition), 0)]
        if not fresh:
            return 0
        try:
            with conn.transaction(), conn.cursor() as cur:
                self.projection.fold(cur, self.schema, fresh)
                self._store_offsets(cur, fresh)
        except psycopg.OperationalError:
            raise
        except Exception as exc:
            log.warning("%s: batch fold failed (%s); folding record by record", self.consumer_name, exc)
            self._fold_one_by_one(conn, fresh)
        for r in fresh:
            self.next[(r.topic, r.partition)] = max(self.next.get((r.topic, r.partition), 0), r.offset + 1)
        self.folded += len(fresh)
        return len(fresh)

    def _fold_one_by_one(self, conn: psycopg.Connection[tuple[object, ...]], fresh: list[LogRecord]) -> None:
        with conn.transaction(), conn.cursor() as cur:
            for r in fresh:
                try:
                    with conn.transaction():  # a savepoint per record
                        self.projection.fold(cur, self.schema, [r])
                except psycopg.OperationalError:
                    raise
                except Exception as exc:
                    cur.execute(
                        'INSERT INTO hivemem.projection_failures (consumer, topic, partition, "offset", error) '
                        "VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                        (self.consumer_name, r.topic, r.partition, r.offset, f"{type(exc).__name__}: {exc}"[:2000]),
                    )
            self._store_offsets(cur, fresh)

    def _store_offsets(self, cur: psycopg.Cursor[tuple[object, ...]], fresh: list[LogRecord]) -> None:
        store_offsets(cur, self.consumer_name, fresh)


class Watermarks:
    """End offsets of partitions, through one long-lived consumer (thread-safe)."""

    def __init__(self, bootstrap: str) -> None:
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "hivemem-watermarks", "log_level": 3})
        self._lock = threading.Lock()

    def __call__(self, topics: list[str]) -> dict[TP, int]:
        with self._lock:
            md = self._consumer.list_topics(timeout=10)
            ends: dict[TP, int] = {}
            for topic in topics:
                t = md.topics.get(topic)
                if t is None:
                    continue
                for p in t.partitions:
                    _, high = self._consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                    ends[(topic, p)] = int(high)
            return ends

    def close(self) -> None:
        self._consumer.close()


def high_watermarks(bootstrap: str, topics: list[str]) -> dict[TP, int]:
    """End offset of every partition of ``topics`` now."""
    wm = Watermarks(bootstrap)
    try:
        return wm(topics)
    finally:
        wm.close()
