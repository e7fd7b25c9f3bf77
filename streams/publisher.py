"""Steps 4 and 5 of the commit protocol (``streams.runtime``): publishing one outbox owner's committed rows,
and the recovery that finds rows which reached Kafka before a crash.

An owner is a processor (``gate``) or, for a processor split over instances, one instance of it
(``gate@1``): its rows, its publish marks and its ``hm-out: <owner>:<seq>`` headers are its own, so two
instances never send each other's rows. An instance that is gone for good leaves its rows to be adopted by
another (``streams.group``), which publishes them under the dead owner's name with this same code.
"""

from __future__ import annotations

import logging
import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from streams import outbox
from streams.kafka import TP, producer_config
from streams.offsets import Conn
from streams.outbox import PublishFailed
from streams.records import OUT_HEADER

log = logging.getLogger("hivemem.streams")
FLUSH_TIMEOUT_S = 30.0
WATERMARK_RETRY_S = 15.0  # longer than a leader election after a broker's loss
# What a partition's end offset lookup says while the partition has no leader (a broker is gone); the
# client's own "unknown partition" comes while its metadata lists the partition without a leader.
ELECTING = (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION,
            KafkaError._UNKNOWN_PARTITION)  # fmt: skip


def end_offset(consumer: Consumer, tp: TP, stop: threading.Event) -> int:
    """A partition's end offset. While a partition elects a new leader (a broker of a cluster went away)
    the lookup fails for a few seconds: retried here rather than taken for an outage, whose recovery
    would drop the producer's queue and scan the marks again."""
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


class OutboxPublisher:
    """One owner's rows on their way to Kafka. ``pending`` holds rows committed since the last round
    (None: unknown, read them from the outbox, as after a start or an outage)."""

    def __init__(self, owner: str, bootstrap: str) -> None:
        self.owner = owner
        self.bootstrap = bootstrap
        self.marks: dict[TP, int] = {}
        self.pending: list[outbox.OutboxRow] | None = None
        self.unsent = True
        self.producer: Producer | None = None

    def keep(self, rows: list[outbox.OutboxRow]) -> None:
        """Rows of a committed transaction: sent by the next publish round."""
        if rows:
            self.unsent = True
        if self.pending is not None:
            self.pending += rows

    def start(self, conn: Conn, consumer: Consumer, stop: threading.Event) -> None:
        """After a start or an outage: the marks, then step 5, then everything unsent is due."""
        self.marks = outbox.get_marks(conn, self.owner)
        self.pending = None
        self.recover(conn, consumer, stop)
        self.unsent = True

    def recover(self, conn: Conn, consumer: Consumer, stop: threading.Event) -> None:
        """Step 5: unsent rows already in their partitions (from the marks to the end) are deleted."""
        rows = outbox.unsent(conn, self.owner, limit=1_000_000)
        start = {tp: off for tp, off in self.marks.items() if tp in {(r.topic, r.partition) for r in rows}}
        if not rows or not start:
            return
        ends = {tp: end_offset(consumer, tp, stop) for tp in start}
        found = outbox.scan_sent(self.bootstrap, self.owner, start, ends, stop.is_set)
        done = [r.seq for r in rows if r.seq in found]
        if done:
            log.warning("%s: %d outputs had reached Kafka before the restart; not sending them again",
                        self.owner, len(done))  # fmt: skip
            outbox.delete(conn, self.owner, done)

    def publish(self, conn: Conn, consumer: Consumer, stop: threading.Event) -> None:
        """Step 4, one round: mark new partitions, produce, flush, delete the acknowledged rows."""
        if not self.unsent:
            return
        if self.pending is None:
            rows = outbox.unsent(conn, self.owner)
            if len(rows) < outbox.UNSENT_LIMIT:
                self.pending = []  # all of them: from now on, the commits say what is unsent
        else:
            rows, self.pending = self.pending, []
        if not rows:
            self.unsent = False
            return
        new = {(r.topic, r.partition) for r in rows} - set(self.marks)
        if new:
            for tp in sorted(new):
                self.marks[tp] = end_offset(consumer, tp, stop)
            outbox.set_marks(conn, self.owner, {tp: self.marks[tp] for tp in new})
        producer = self.producer or Producer(producer_config(self.bootstrap))
        self.producer = producer
        delivered: dict[TP, int] = {}
        failed: list[str] = []

        def report(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                failed.append(str(err))
            else:
                tp = (str(msg.topic()), int(msg.partition() or 0))
                delivered[tp] = max(delivered.get(tp, -1), int(msg.offset() or 0))

        for r in rows:
            out = outbox.out_id(self.owner, r.seq)
            headers: list[tuple[str, str | bytes | None]] = [*r.headers, (OUT_HEADER, out)]
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
            outbox.delete(conn, self.owner, [r.seq for r in rows])
            for tp, off in delivered.items():
                self.marks[tp] = off + 1
            outbox.set_marks(conn, self.owner, {tp: self.marks[tp] for tp in delivered})

    def drain(self, conn: Conn, consumer: Consumer, stop: threading.Event) -> None:
        """Publish rounds until nothing of this owner is left (an adopted owner's rows)."""
        self.start(conn, consumer, stop)
        while self.unsent and not stop.is_set():
            self.publish(conn, consumer, stop)

    def reset(self) -> None:
        """An outage: nothing queued may be retried behind the recovery's back; drop it, start afresh."""
        self.pending = None
        if self.producer is not None:
            self.producer.purge()
            self.producer.poll(0)
            self.producer = None

    def close(self) -> None:
        if self.producer is not None:
            self.producer.flush(1.0)
            self.producer.purge()
            self.producer = None
