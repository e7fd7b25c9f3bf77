"""confluent-kafka configuration and the few broker queries the runtime needs."""

from __future__ import annotations

import threading
import time
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from streams.records import LogRecord, from_message

TP = tuple[str, int]
# Outputs may be a little larger than the inbound record they carry (headers), and inbound
# topics take records up to Kafka's default 1 MB: the processors' producer and the output
# topics allow more, so a forwarded record always fits (see hivemem.kafka_topics).
OUTPUT_MAX_BYTES = 4 * 1024 * 1024


def consumer_config(bootstrap: str, name: str) -> dict[str, Any]:
    """A consumer that is assigned partitions at offsets stored in Postgres: no group
    management, no Kafka commits."""
    return {
        "bootstrap.servers": bootstrap,
        "group.id": f"hivemem-{name}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        # A fetch returns as soon as a record arrives (fetch.min.bytes 1): this is only how long
        # the broker holds an empty one. Short, every idle consumer keeps the broker busy: at 100 ms
        # the idle local broker took 10.8 % of a core, at 500 (librdkafka's default) 7.0 %.
        "fetch.wait.max.ms": 500,
        "fetch.message.max.bytes": OUTPUT_MAX_BYTES,
        "log_level": 3,
    }


def producer_config(bootstrap: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 1,
        "message.max.bytes": OUTPUT_MAX_BYTES,
        # Outages surface as delivery errors and runtime retries; librdkafka's log would repeat them.
        "log_level": 2,
    }


def partitions(consumer: Consumer, topics: list[str], timeout: float = 5.0) -> list[TP]:
    md = consumer.list_topics(timeout=timeout)
    tps: list[TP] = []
    for topic in topics:
        t = md.topics.get(topic)
        if t is None or t.error is not None:
            raise KafkaException(f"topic {topic} does not exist (hivemem up creates it)")
        tps += [(topic, p) for p in sorted(t.partitions)]
    return tps


class Watermarks:
    """End offsets of partitions, through one long-lived consumer (thread-safe)."""

    def __init__(self, bootstrap: str) -> None:
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "hivemem-watermarks", "log_level": 3})
        self._lock = threading.Lock()

    def __call__(self, topics: list[str], timeout: float = 5.0) -> dict[TP, int]:
        with self._lock:
            md = self._consumer.list_topics(timeout=timeout)
            ends: dict[TP, int] = {}
            for topic in topics:
                t = md.topics.get(topic)
                if t is None:
                    continue
                for p in t.partitions:
                    _, high = self._consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
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


def read_topics(bootstrap: str, topics: list[str], timeout_s: float = 60.0) -> list[LogRecord]:
    """Every record of ``topics`` from offset 0 up to their end offsets now (verification tools)."""
    ends = {tp: end for tp, end in high_watermarks(bootstrap, topics).items() if end > 0}
    consumer = Consumer({**consumer_config(bootstrap, "reader"), "group.id": "hivemem-reader"})
    out: list[LogRecord] = []
    try:
        consumer.assign([TopicPartition(t, p, 0) for (t, p) in ends])
        seen = dict.fromkeys(ends, 0)
        deadline = time.monotonic() + timeout_s
        while any(seen[tp] < end for tp, end in ends.items()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"could not read {topics} to their end within {timeout_s} s")
            for m in consumer.consume(500, 0.5):
                if m.error() is not None:
                    continue
                rec = from_message(m)
                if rec.offset < ends.get((rec.topic, rec.partition), 0):
                    out.append(rec)
                    seen[(rec.topic, rec.partition)] = rec.offset + 1
    finally:
        consumer.close()
    return out
