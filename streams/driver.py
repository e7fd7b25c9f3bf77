"""Run one processor without a broker or a database (Kafka Streams' test driver): each record piped
in gets the next offset of its topic-partition, and the processor's outputs come back."""

from __future__ import annotations

from collections import Counter

from streams.processor import Processor
from streams.records import LogRecord, OutRecord


class ProcessorDriver:
    def __init__(self, processor: Processor) -> None:
        self.processor = processor
        self._offsets: Counter[tuple[str, int]] = Counter()

    def pipe(self, value: bytes, log_time: int, partition: int = 0, topic: str | None = None) -> list[OutRecord]:
        """Feed one record (to the processor's first input topic unless ``topic`` is given)."""
        topic = topic or self.processor.input_topics()[0]
        off = self._offsets[(topic, partition)]
        self._offsets[(topic, partition)] += 1
        return self.processor.process([LogRecord(topic, partition, off, log_time, None, value)], log_time)
