"""What a processor emits: plain records, independent of the Kafka client that sends them."""

from __future__ import annotations

from dataclasses import dataclass

# Headers the gate puts on its outputs, so every downstream row can name its source record.
SRC_HEADER = "hm-src"  # "<topic>/<partition>/<offset>" of the inbound record
LOG_TIME_HEADER = "hm-log-time"  # broker append time of the inbound record, ms


@dataclass(frozen=True)
class OutRecord:
    topic: str
    partition: int
    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...]


def parse_src(value: bytes) -> tuple[str, int, int]:
    topic, partition, offset = value.decode().rsplit("/", 2)
    return topic, int(partition), int(offset)
