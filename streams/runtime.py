"""The stream runtime: one confluent-kafka batch loop for every processor.

Commit protocol (the one place it is written down; every processor, projector and replay
runs on it):

1. Start. Connect to Postgres and take the advisory lock ``stream:<name>`` (a second copy
   waits as a standby). ``processor.open`` loads the processor's state. The consumer is
   *assigned* its input partitions at the offsets stored in ``hivemem.projection_offsets``;
   Kafka's committed offsets play no part. Then the recovery of step 5 runs. (A processor
   split over instances, ``streams.group``, holds that lock shared, and the group hands it
   partitions, each taken under its own lock at its stored offset; its outbox is its own.)
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

import contextlib
import logging
import threading
import time
from collections.abc import Callable

import psycopg
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, TopicPartition

from streams import group, outbox, progress
from streams.kafka import TP, consumer_config, partitions
from streams.offsets import Conn, ends_of, store_offsets, stored_offsets, wait_advisory_lock
from streams.outbox import PublishFailed
from streams.processor import Failure, Outage, Processor
from streams.publisher import OutboxPublisher
from streams.records import LogRecord, OutRecord, from_message

log = logging.getLogger("hivemem.streams")
OUTAGES = (psycopg.OperationalError, psycopg.InterfaceError, KafkaException, PublishFailed, Outage)
HEARTBEAT_S = 1.0
# A step waits up to this long for its first record, then takes what has been fetched already
# without waiting: a record is processed as soon as it arrives, and an idle loop sleeps in C.
POLL_S = 0.1
TICK_S = 0.2  # an idle loop still calls process([]) this often (the governance processor's expiry)


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
        instance: str | None = None,
        durable: bool = True,
    ) -> None:
        self.processor = processor
        self.durable = durable
        self.name = processor.name
        self.bootstrap = bootstrap
        self.db_url = db_url
        self.batch_size = batch_size
        self.exclusive = exclusive
        self.report_progress = report_progress
        self.on_batch = on_batch
        # Split over instances (streams.group) when an instance is named and the processor allows it.
        self.instance = instance if instance and getattr(processor, "parallel", False) else None
        self.owner = group.owner_of(self.name, self.instance) if self.instance else self.name
        self.next: dict[TP, int] = {}
        self.processed = 0
        self.refused = 0
        self._conn: Conn | None = None
        self._consumer: Consumer | None = None
        self._out = OutboxPublisher(self.owner, bootstrap)
        self._adopt_due = False
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
        # psycopg prepares a statement run 5 times (its default): the per-batch claims, offsets and outbox
        # statements then skip parse and plan (Postgres CPU per envelope 220 -> 135 us in bench pipeline).
        conn: Conn = psycopg.connect(self.db_url, autocommit=True, prepare_threshold=5, connect_timeout=5)
        self._conn = conn
        if not self.durable:
            # A commit that does not wait for its WAL flush: still atomic (effects and offsets together or
            # neither), only the last few batches may be lost in a server crash, to be folded again. For work
            # that is redone from the log anyway (a replay's shadow); a batch's flush was 6 ms of it.
            conn.execute("SET synchronous_commit = off")
        if self.instance is not None:
            # Beside the other instances, never beside an unsplit copy; and one process per instance name.
            if not group.wait_shared(conn, f"stream:{self.name}", stop):
                return False
            if not wait_advisory_lock(conn, f"outbox:{self.owner}", stop):
                return False
        elif self.exclusive and not wait_advisory_lock(conn, f"stream:{self.name}", stop):
            return False
        if self.instance is not None:
            self.next = {}
            self._held_changed(conn)  # none yet
        self.processor.open(conn)
        if self.instance is not None:
            # Partitions come from the group (_assigned), each at its stored offset.
            copartitioned = bool(getattr(self.processor, "copartitioned", False))
            self._consumer = Consumer(group.group_config(self.bootstrap, self.name, self.instance, copartitioned))
            self._consumer.subscribe(self.processor.input_topics(), on_assign=self._assigned,
                                     on_revoke=self._revoked, on_lost=self._revoked)  # fmt: skip
            self._adopt_due = True
        else:
            if self._consumer is None:
                self._consumer = Consumer(consumer_config(self.bootstrap, self.name))
            stored = stored_offsets(conn, self.name)
            tps = partitions(self._consumer, self.processor.input_topics())
            self.next = {tp: stored.get(tp, 0) for tp in tps}
            self._consumer.assign([TopicPartition(t, p, stored.get((t, p), OFFSET_BEGINNING)) for t, p in tps])
        self._out.start(conn, self._consumer, stop)
        self._publish(stop)
        self._heartbeat(force=True)
        return True

    # -- a split processor's partitions (streams.group) -------------------------------------

    def _assigned(self, consumer: Consumer, assigned: list[TopicPartition]) -> None:
        conn = self._conn
        assert conn is not None
        tps = [(str(tp.topic), int(tp.partition)) for tp in assigned]
        group.take_partitions(conn, self.name, tps, threading.Event())
        stored = stored_offsets(conn, self.name)
        for tp in assigned:
            tp.offset = stored.get((str(tp.topic), int(tp.partition)), OFFSET_BEGINNING)
        self.next.update({tp: stored.get(tp, 0) for tp in tps})
        self._held_changed(conn)
        consumer.assign(assigned)
        self._adopt_due = True  # an instance may have gone: its outbox rows need an owner
        log.warning("%s: assigned %s", self.owner, sorted(tps))  # a rebalance: rare, and worth seeing

    def _revoked(self, consumer: Consumer, revoked: list[TopicPartition]) -> None:
        # Called from poll, between batches: every record of these partitions taken so far is committed.
        tps = [(str(tp.topic), int(tp.partition)) for tp in revoked]
        for tp in tps:
            self.next.pop(tp, None)
        conn = self._conn
        if conn is not None and not conn.closed:
            # (A broken connection has lost them already: the locks die with the session.)
            with contextlib.suppress(psycopg.Error):
                group.release_partitions(conn, self.name, tps)
                self._held_changed(conn)
        log.warning("%s: revoked %s", self.owner, sorted(tps))

    def _held_changed(self, conn: Conn) -> None:
        """Tell a processor whose state follows its partitions which ones it holds now (``streams.group``)."""
        hook = getattr(self.processor, "partitions_changed", None)
        if hook is not None:
            hook(conn, frozenset(self.next))

    def _adopt(self, stop: threading.Event) -> None:
        """Publish the outbox rows of instances that are gone (their owner lock is free), as them."""
        conn, consumer = self._conn, self._consumer
        assert conn is not None and consumer is not None
        self._adopt_due = False
        for other in group.orphans(conn, self.name, self.owner):
            if not group.try_lock(conn, f"outbox:{other}"):
                continue  # alive: it publishes its own
            try:
                adopted = OutboxPublisher(other, self.bootstrap)
                try:
                    adopted.drain(conn, consumer, stop)
                finally:
                    adopted.close()
                log.warning("%s: published the outbox rows %s left", self.owner, other)
            finally:
                group.unlock(conn, f"outbox:{other}")

    def _step(self, stop: threading.Event) -> None:
        assert self._consumer is not None
        first = self._consumer.poll(POLL_S)
        more = self._consumer.consume(self.batch_size - 1, timeout=0) if first is not None else []
        records = self._records([first, *more] if first is not None else [])
        if self.instance is not None:
            if self._adopt_due:  # before any new output: a gone instance's verdicts come first
                self._adopt(stop)
            # Only partitions this instance holds (not ones revoked during this poll).
            records = [r for r in records if (r.topic, r.partition) in self.next]
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
        self._out.keep(rows)

    def _commit(self, outputs: list[OutRecord], fresh: list[LogRecord], refused: int) -> list[outbox.OutboxRow]:
        conn = self._conn
        assert conn is not None
        rows = outbox.add(conn, self.owner, outputs)
        store_offsets(conn, self.name, fresh)
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

    # -- steps 4 and 5 (streams.publisher) ---------------------------------------------------

    def _publish(self, stop: threading.Event) -> None:
        if self._conn is not None and self._consumer is not None:
            self._out.publish(self._conn, self._consumer, stop)

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
        self._out.reset()
        if self.instance is not None and self._consumer is not None:
            # Its partition locks die with the connection: leave the group, rejoin after the backoff.
            with contextlib.suppress(KafkaException, RuntimeError):
                self._consumer.close()
            self._consumer = None
            self.next = {}
        if self._conn is not None:
            try:
                if self.report_progress and not self._conn.broken:
                    progress.report(self._conn, self.name, "reconnecting", lag=self._lag())
            except Exception:
                pass
            self._conn.close()
            self._conn = None

    def _shutdown(self) -> None:
        self._out.close()
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
