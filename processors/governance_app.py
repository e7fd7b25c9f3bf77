"""The governance processor (``python -m hivemem.services governance``).

Consumes accepted presence, proposals and votes; emits decisions and facts to the
``decision`` and ``fact`` topics and refusals to ``rejected``. It keeps its state and its
input offsets in Postgres, so it uses a plain confluent-kafka consumer with manual
assignment rather than Faust: Kafka's committed offsets play no part.

Commit protocol (the one place it is written down):
1. One instance holds the advisory lock ``processor:governance``; it loads the state and
   is assigned its input partitions at the offsets stored with that state.
2. A batch is applied to the in-memory state (pure rules), then deadlines are ticked.
3. One Postgres transaction stores the changed state, the outputs (the outbox) and the new
   input offsets. A crash before it commits redoes the batch from the same state.
4. Publishing: the end offset of every output partition about to be written is recorded
   (``publish_marks``), the unsent outbox rows are produced (idempotent producer, acks=all)
   and flushed, then marked sent.
5. On start and after any error the state is reloaded, and unsent rows are first looked
   for in the output partitions from their marks: rows already there are marked sent, the
   rest are sent. So every decision, fact and refusal reaches Kafka once, whatever the
   moment the processor was killed.
"""

from __future__ import annotations

import logging
import threading
import time

import psycopg
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from contracts.avro import ContractError, decode_record
from contracts.topics import TopicNames
from governance.signing import Signer
from governance.voting import GovernanceState, VotingConfig
from processors.governance_core import GovernanceCore
from processors.governance_store import Conn, get_marks, load_state, mark_sent, save_batch, set_marks, unsent
from producers.claw_client import producer_config
from projections.projector import (
    TP,
    Watermarks,
    consumer_config,
    stored_offsets,
    to_log_record,
    wait_advisory_lock,
)

CONSUMER = "governance-processor"  # its offsets row; the read model is "governance"
BATCH = 1000
log = logging.getLogger("hivemem.governance")


class PublishFailed(RuntimeError):
    pass


class GovernanceProcessor:
    def __init__(self, cfg: VotingConfig, bootstrap: str, db_url: str, names: TopicNames, signer: Signer) -> None:
        self.cfg = cfg
        self.bootstrap = bootstrap
        self.db_url = db_url
        self.names = names
        self.core = GovernanceCore(names, signer)
        self.next: dict[TP, int] = {}
        self.state: GovernanceState | None = None

    def run(self, stop: threading.Event) -> None:
        consumer = Consumer(consumer_config(self.bootstrap, CONSUMER))
        producer = Producer(producer_config(self.bootstrap))
        watermarks = Watermarks(self.bootstrap)
        conn: Conn | None = None
        try:
            while not stop.is_set():
                try:
                    if conn is None or conn.closed:
                        conn = psycopg.connect(self.db_url, autocommit=True, prepare_threshold=None)
                        if not wait_advisory_lock(conn, "processor:governance", stop):
                            return
                        self.state = load_state(conn, self.cfg)
                        self._assign(consumer, conn)
                        self._recover(conn, watermarks)
                    self._step(conn, consumer)
                    self._publish(conn, producer, watermarks)
                except (psycopg.OperationalError, KafkaException, PublishFailed) as exc:
                    log.warning("governance: %s; reloading state from Postgres", exc)
                    if conn is not None:
                        conn.close()
                    conn = None
                    stop.wait(1.0)
        finally:
            consumer.close()
            watermarks.close()
            producer.flush(10)
            if conn is not None:
                conn.close()

    def _assign(self, consumer: Consumer, conn: Conn) -> None:
        stored = stored_offsets(conn, CONSUMER)
        md = consumer.list_topics(timeout=10)
        tps: list[TP] = []
        for topic in self.core.input_topics():
            t = md.topics.get(topic)
            if t is None or t.error is not None:
                raise KafkaException(f"topic {topic} does not exist")
            tps += [(topic, p) for p in sorted(t.partitions)]
        self.next = {tp: stored.get(tp, 0) for tp in tps}
        consumer.assign([TopicPartition(t, p, stored.get((t, p), OFFSET_BEGINNING)) for t, p in tps])

    def _step(self, conn: Conn, consumer: Consumer) -> None:
        assert self.state is not None
        msgs = consumer.consume(BATCH, timeout=0.1)
        for m in msgs:
            if m.error() is not None:
                log.warning("governance: consume error %s", m.error())
        records = [to_log_record(m) for m in msgs if m.error() is None]
        fresh = [r for r in records if r.offset >= self.next.get((r.topic, r.partition), 0)]
        outputs = self.core.apply(self.state, fresh) + self.core.tick(self.state, int(time.time() * 1000))
        if not fresh and not outputs:
            return
        with conn.transaction(), conn.cursor() as cur:
            save_batch(cur, self.state, outputs, CONSUMER, fresh)
        self.state.clear_dirty()
        for r in fresh:
            self.next[(r.topic, r.partition)] = max(self.next.get((r.topic, r.partition), 0), r.offset + 1)

    def _publish(self, conn: Conn, producer: Producer, watermarks: Watermarks) -> None:
        rows = unsent(conn)
        if not rows:
            return
        ends = watermarks(sorted({r.topic for r in rows}))
        set_marks(conn, {tp: ends.get(tp, 0) for tp in {(r.topic, r.partition) for r in rows}})
        failed: list[str] = []

        def report(err: KafkaError | None, _msg: Message) -> None:
            if err is not None:
                failed.append(str(err))

        for r in rows:
            while True:
                try:
                    producer.produce(r.topic, value=r.value, key=r.key, partition=r.partition, on_delivery=report)
                    break
                except BufferError:
                    producer.poll(0.05)
        if producer.flush(30) > 0 or failed:
            raise PublishFailed(f"outputs not acknowledged: {failed[:1] or 'flush timed out'}")
        mark_sent(conn, [r.seq for r in rows])

    def _recover(self, conn: Conn, watermarks: Watermarks) -> None:
        """Mark sent the unsent rows a killed predecessor did get into Kafka."""
        rows = unsent(conn, limit=1_000_000)
        marks = get_marks(conn)
        if not rows or not marks:
            return
        wanted = {r.event_id: r.seq for r in rows}
        found = scan_event_ids(self.bootstrap, marks, watermarks(sorted({t for t, _ in marks})))
        done = [seq for eid, seq in wanted.items() if eid in found]
        if done:
            log.warning("governance: %d outputs were already in Kafka before the restart", len(done))
            mark_sent(conn, done)


def scan_event_ids(bootstrap: str, start: dict[TP, int], ends: dict[TP, int]) -> set[str]:
    """eventIds of the records between ``start`` and ``ends`` in those partitions."""
    todo = {tp: off for tp, off in start.items() if ends.get(tp, 0) > off}
    if not todo:
        return set()
    consumer = Consumer({**consumer_config(bootstrap, "governance-recovery"), "enable.partition.eof": False})
    found: set[str] = set()
    try:
        consumer.assign([TopicPartition(t, p, off) for (t, p), off in todo.items()])
        pending = dict(todo)
        deadline = time.monotonic() + 120
        while pending and time.monotonic() < deadline:
            for m in consumer.consume(1000, timeout=0.5):
                if m.error() is not None:
                    continue
                tp = (str(m.topic()), int(m.partition() or 0))
                try:
                    eid = decode_record(m.value() or b"").record.get("eventId")
                except ContractError:
                    eid = None
                if eid:
                    found.add(str(eid))
                if int(m.offset() or 0) + 1 >= ends[tp]:
                    pending.pop(tp, None)
        if pending:
            raise PublishFailed(f"could not read back output partitions {sorted(pending)}")
    finally:
        consumer.close()
    return found
