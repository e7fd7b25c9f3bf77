"""The stream runtime: one confluent-kafka batch loop for every processor.

Commit protocol (the one place it is written down; every processor, projector and replay
runs on it):

1. Start. Connect to Postgres and take the advisory lock ``stream:<name>`` (a second copy
   waits as a standby). ``processor.open`` loads the processor's state. The consumer is
   *assigned* its input partitions at the offsets stored in ``hivemem.projection_offsets``;
   Kafka's committed offsets play no part. Then the recovery of step 5 runs.
2. A batch. Records below the stored offsets are dropped. ``processor.process`` runs inside
   one Postgres transaction that also writes its outputs to ``hivemem.outbox``, advances
   the stored input offsets and the progress row. A crash before the commit redoes the
   batch from the same state; after the commit the batch is never processed again.
3. A record's fault. If ``process`` raises anything but an outage, the transaction rolls
   back, the state is reloaded and the batch is redone record by record, each in a
   savepoint. A record that fails again is written to ``hivemem.processing_failures``
   with a reference and given its verdict by ``processor.refuse`` (e.g. a
   ``PROCESSING_ERROR`` rejection); its batch-mates go on. Every record gets one verdict.
4. Publishing, after the commit. For an output partition not written before, its end
   offset is stored as its publish mark first. Outbox rows are produced with
   ``hm-out: <name>:<seq>`` (idempotent producer, acks=all) and flushed; then, in one
   transaction, the acknowledged rows are deleted and each partition's mark moves past
   its last acknowledged record. So a mark is never beyond an unacknowledged output.
   The rows to send are kept in memory from the commit (read from the outbox only after
   a start or an outage). The deleting transaction does not wait for its WAL flush
   (``synchronous_commit = off``): if a crash loses it, the rows and the older marks come
   back, and step 5 finds those rows in Kafka and deletes them without sending them again.
5. Recovery, on start and after every outage: unsent rows are first looked for in their
   partitions from the marks to the end; rows found there are deleted, the rest are sent.
   So every output reaches Kafka once, whatever moment the process died.
6. An outage (Postgres or Kafka unreachable, a publish not acknowledged, or a processor's
   ``Outage``: a model server it needs is down) is never a record's fault: the transaction
   rolls back, the producer's queue is purged, the connection is dropped and, after a backoff
   (0.5 s doubling to 10 s), the loop resumes at step 1 from the stored offsets. It never moves
   past a record without its verdict.

Processors judge time by the records' broker log time; the wall clock is passed only for
ticks (the governance processor's expiry). Each loop reports to
``hivemem.processor_progress`` at least every second, so ``/readyz`` sees a stuck loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import psycopg
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from streams import outbox, progress
from streams.kafka import TP, consumer_config, partitions, producer_config
from streams.offsets import Conn, ends_of, store_offsets, stored_offsets, wait_advisory_lock
from streams.outbox import PublishFailed
from streams.processor import Failure, Outage, Processor
from streams.records import OUT_HEADER, LogRecord, OutRecord, from_message

log = logging.getLogger("hivemem.streams")
OUTAGES = (psycopg.OperationalError, psycopg.InterfaceError, KafkaException, PublishFailed, Outage)
HEARTBEAT_S = 1.0
# A step waits up to this long for its first record, then takes what has been fetched already
# without waiting: a record is processed as soon as it arrives, and an idle loop sleeps in C.
POLL_S = 0.1
TICK_S = 0.2  # an idle loop still calls process([]) this often (the governance processor's expiry)
FLUSH_TIMEOUT_S = 30.0
WATERMARK_RETRY_S = 15.0  # longer than a leader election after a broker's loss
# What a partition's end offset lookup says while the partition has no leader (a broker is gone); the
# client's own "unknown partition" comes while its metadata lists the partition without a leader.
ELECTING = (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION,
            KafkaError._UNKNOWN_PARTITION)  # fmt: skip


class StreamRuntime:
    def __init__(
        self,
        processor: Processor,
        bootstrap: str,
        db_url: str,
        *,
        batch_size: int = 1000,
        exclusive: bool = True,
        report_progress: bool = True,
        on_batch: Callable[[int], None] | None = None,
    ) -> None:
        self.processor = processor
        self.name = processor.name
        self.bootstrap = bootstrap
        self.db_url = db_url
        self.batch_size = batch_size
        self.exclusive = exclusive
        self.report_progress = report_progress
        self.on_batch = on_batch
        self.next: dict[TP, int] = {}
        self.processed = 0
        self.refused = 0
        self._conn: Conn | None = None
        self._consumer: Consumer | None = None
        self._producer: Producer | None = None
        self._marks: dict[TP, int] = {}
        self._unsent = True
        # Outbox rows committed and not yet published; None: unknown, read them from the outbox.
        self._pending: list[outbox.OutboxRow] | None = None
        self._beat = 0.0
        self._tick = 0.0

    # -- the loop ---------------------------------------------------------------------------

    def run(self, stop: threading.Event, until: dict[TP, int] | None = None) -> None:
        """Process until ``stop`` is set or, given ``until``, every partition reaches its end there."""
        backoff = 0.5
        try:
            while not stop.is_set():
                try:
                    if self._conn is None and not self._start(stop):
                        return
                    if until is not None and all(self.next.get(tp, 0) >= end for tp, end in until.items()):
                        self._publish(stop)
                        return
                    self._step(stop)
                    backoff = 0.5
                except OUTAGES as exc:
                    log.warning("%s: outage (%s); resuming from the stored offsets in %.1f s", self.name,
                                str(exc).splitlines()[0] if str(exc) else type(exc).__name__, backoff)  # fmt: skip
                    self._reset()
                    stop.wait(backoff)
                    backoff = min(backoff * 2, 10.0)
        finally:
            self._shutdown()

    def _start(self, stop: threading.Event) -> bool:
        conn: Conn = psycopg.connect(self.db_url, autocommit=True, prepare_threshold=None, connect_timeout=5)
        self._conn = conn
        if self.exclusive and not wait_advisory_lock(conn, f"stream:{self.name}", stop):
            return False
        if self._consumer is None:
            self._consumer = Consumer(consumer_config(self.bootstrap, self.name))
        stored = stored_offsets(conn, self.name)
        tps = partitions(self._consumer, self.processor.input_topics())
        self.next = {tp: stored.get(tp, 0) for tp in tps}
        self._consumer.assign([TopicPartition(t, p, stored.get((t, p), OFFSET_BEGINNING)) for t, p in tps])
        self.processor.open(conn)
        self._marks = outbox.get_marks(conn, self.name)
        self._recover(stop)
        self._unsent = True
        self._publish(stop)
        self._heartbeat(force=True)
        return True

    def _step(self, stop: threading.Event) -> None:
        assert self._consumer is not None
        first = self._consumer.poll(POLL_S)
        more = self._consumer.consume(self.batch_size - 1, timeout=0) if first is not None else []
        records = self._records([first, *more] if first is not None else [])
        fresh = [r for r in records if r.offset >= self.next.get((r.topic, r.partition), 0)]
        if not fresh and time.monotonic() - self._tick < TICK_S:
            self._heartbeat()
            return
        self._tick = time.monotonic()
        if self._apply(fresh, int(time.time() * 1000)):
            for tp, end in ends_of(fresh).items():
                self.next[tp] = max(self.next.get(tp, 0), end)
            self.processed += len(fresh)
            if self.on_batch is not None and fresh:
                self.on_batch(len(fresh))
        self._publish(stop)
        self._heartbeat()

    def _records(self, msgs: list[Message]) -> list[LogRecord]:
        records = []
        for m in msgs:
            err = m.error()
            if err is None:
                records.append(from_message(m))
            elif err.fatal():
                raise KafkaException(err)
            elif err.code() != KafkaError._PARTITION_EOF:
                log.warning("%s: consume error %s", self.name, err)
        return records

    # -- steps 2 and 3 ----------------------------------------------------------------------

    def _apply(self, fresh: list[LogRecord], now_ms: int) -> bool:
        """Process a batch in one transaction; True if anything was committed."""
        conn = self._conn
        assert conn is not None
        try:
            with conn.transaction():
                outputs = self.processor.process(fresh, now_ms)
                if not fresh and not outputs:
                    return False
                rows = self._commit(outputs, fresh, 0)
            self._keep(rows)
            return True
        except OUTAGES:
            raise
        except Exception as exc:
            if conn.broken or conn.closed:
                raise psycopg.OperationalError(f"connection lost: {exc}") from exc
            if not fresh:
                raise KafkaException(f"{self.name} failed on a tick: {exc!r}") from exc  # retried after a backoff
            log.warning("%s: batch of %d failed (%s); redoing it record by record", self.name, len(fresh),
                        type(exc).__name__)  # fmt: skip
        with conn.transaction():
            self.processor.open(conn)
            outputs, refused = [], 0
            for rec in fresh:
                try:
                    with conn.transaction():  # a savepoint per record
                        outputs += self.processor.process([rec], now_ms)
                except OUTAGES:
                    raise
                except Exception as exc:
                    if conn.broken or conn.closed:
                        raise psycopg.OperationalError(f"connection lost: {exc}") from exc
                    failure = Failure.of(self.name, rec, exc)
                    log.error("%s: %s refused with %s: %s", self.name, rec.position, failure.reference, failure.error)
                    self.processor.open(conn)  # state as of the savepoint
                    self._record_failure(conn, failure)
                    outputs += self.processor.refuse(failure)
                    refused += 1
            rows = self._commit(outputs, fresh, refused)
        self._keep(rows)
        self.refused += refused
        return True

    def _keep(self, rows: list[outbox.OutboxRow]) -> None:
        """Rows of a committed transaction: sent by the next publish round."""
        if self._pending is not None:
            self._pending += rows

    def _commit(self, outputs: list[OutRecord], fresh: list[LogRecord], refused: int) -> list[outbox.OutboxRow]:
        conn = self._conn
        assert conn is not None
        rows = outbox.add(conn, self.name, outputs)
        store_offsets(conn, self.name, fresh)
        if outputs:
            self._unsent = True
        if self.report_progress:
            ends = ends_of(fresh)
            progress.report(conn, self.name, "running", lag=self._lag(ends), records=len(fresh), refused=refused,
                            batch=True)  # fmt: skip
            self._beat = time.monotonic()
        return rows

    @staticmethod
    def _record_failure(conn: Conn, f: Failure) -> None:
        r = f.record
        conn.execute(
            'INSERT INTO hivemem.processing_failures (processor, topic, partition, "offset", error, reference) '
            "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
            (f.processor, r.topic, r.partition, r.offset, f.error.replace("\x00", "\\0"), f.reference),
        )

    # -- steps 4 and 5 ----------------------------------------------------------------------

    def _publish(self, stop: threading.Event) -> None:
        conn = self._conn
        if not self._unsent or conn is None:
            return
        if self._pending is None:
            rows = outbox.unsent(conn, self.name)
            if len(rows) < outbox.UNSENT_LIMIT:
                self._pending = []  # all of them: from now on, the commits say what is unsent
        else:
            rows, self._pending = self._pending, []
        if not rows:
            self._unsent = False
            return
        consumer = self._consumer
        assert consumer is not None
        new = {(r.topic, r.partition) for r in rows} - set(self._marks)
        if new:
            for tp in sorted(new):
                self._marks[tp] = self._end_offset(tp, stop)
            outbox.set_marks(conn, self.name, {tp: self._marks[tp] for tp in new})
        producer = self._producer or Producer(producer_config(self.bootstrap))
        self._producer = producer
        delivered: dict[TP, int] = {}
        failed: list[str] = []

        def report(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                failed.append(str(err))
            else:
                tp = (str(msg.topic()), int(msg.partition() or 0))
                delivered[tp] = max(delivered.get(tp, -1), int(msg.offset() or 0))

        for r in rows:
            headers: list[tuple[str, str | bytes | None]] = [*r.headers, (OUT_HEADER, outbox.out_id(self.name, r.seq))]
            while True:
                try:
                    producer.produce(r.topic, value=r.value, key=r.key, partition=r.partition, headers=headers,
                                     on_delivery=report)  # fmt: skip
                    break
                except BufferError:
                    producer.poll(0.05)
        deadline = time.monotonic() + FLUSH_TIMEOUT_S
        while producer.flush(0.5) > 0:
            if stop.is_set() or time.monotonic() > deadline:
                raise PublishFailed("outputs not acknowledged in time")
        if failed:
            raise PublishFailed(f"outputs not acknowledged: {failed[0]}")
        with conn.transaction():
            conn.execute("SET LOCAL synchronous_commit = off")  # see step 4 of the protocol
            outbox.delete(conn, self.name, [r.seq for r in rows])
            for tp, off in delivered.items():
                self._marks[tp] = off + 1
            outbox.set_marks(conn, self.name, {tp: self._marks[tp] for tp in delivered})

    def _end_offset(self, tp: TP, stop: threading.Event) -> int:
        """A partition's end offset. While a partition elects a new leader (a broker of a cluster
        went away) the lookup fails for a few seconds: retried here rather than taken for an
        outage, whose recovery would drop the producer's queue and scan the marks again."""
        consumer = self._consumer
        assert consumer is not None
        deadline = time.monotonic() + WATERMARK_RETRY_S
        while True:
            try:
                return int(consumer.get_watermark_offsets(TopicPartition(*tp), timeout=5)[1])
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                electing = isinstance(err, KafkaError) and err.code() in ELECTING
                if not electing or time.monotonic() > deadline or stop.is_set():
                    raise
                stop.wait(0.2)

    def _recover(self, stop: threading.Event) -> None:
        conn, consumer = self._conn, self._consumer
        assert conn is not None and consumer is not None
        rows = outbox.unsent(conn, self.name, limit=1_000_000)
        start = {tp: off for tp, off in self._marks.items() if tp in {(r.topic, r.partition) for r in rows}}
        if not rows or not start:
            return
        ends = {tp: self._end_offset(tp, stop) for tp in start}
        found = outbox.scan_sent(self.bootstrap, self.name, start, ends, stop.is_set)
        done = [r.seq for r in rows if r.seq in found]
        if done:
            log.warning("%s: %d outputs had reached Kafka before the restart; not sending them again",
                        self.name, len(done))  # fmt: skip
            outbox.delete(conn, self.name, done)

    # -- liveness and teardown --------------------------------------------------------------

    def _lag(self, ahead: dict[TP, int] | None = None) -> int:
        consumer = self._consumer
        if consumer is None:
            return 0
        lag = 0
        for tp, nxt in self.next.items():
            nxt = max(nxt, (ahead or {}).get(tp, 0))
            try:
                _, high = consumer.get_watermark_offsets(TopicPartition(*tp), cached=True)
            except KafkaException:
                continue
            if high >= 0:
                lag += max(0, int(high) - nxt)
        return lag

    def _heartbeat(self, force: bool = False) -> None:
        if not self.report_progress or self._conn is None:
            return
        if force or time.monotonic() - self._beat >= HEARTBEAT_S:
            progress.report(self._conn, self.name, "running", lag=self._lag())
            self._beat = time.monotonic()

    def _reset(self) -> None:
        self._pending = None
        if self._producer is not None:
            # Nothing queued may be retried behind the recovery's back: drop it, start afresh.
            self._producer.purge()
            self._producer.poll(0)
            self._producer = None
        if self._conn is not None:
            try:
                if self.report_progress and not self._conn.broken:
                    progress.report(self._conn, self.name, "reconnecting", lag=self._lag())
            except Exception:
                pass
            self._conn.close()
            self._conn = None

    def _shutdown(self) -> None:
        if self._producer is not None:
            self._producer.flush(1.0)
            self._producer.purge()
            self._producer = None
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
        if self._conn is not None:
            try:
                if self.report_progress:
                    progress.report(self._conn, self.name, "stopped", lag=self._lag())
            except Exception:
                pass
            self._conn.close()
            self._conn = None
