"""A consumed Kafka record as projectors see it, decoupled from the client library."""

from __future__ import annotations

from dataclasses import dataclass

SRC_HEADER = "hm-src"
LOG_TIME_HEADER = "hm-log-time"


@dataclass(frozen=True)
class LogRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int  # ms
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()

    def header(self, name: str) -> bytes | None:
        for k, v in self.headers:
            if k == name:
                return v
        return None

    def source(self) -> tuple[str, int, int]:
        """The inbound record this one was derived from (itself if it has no hm-src)."""
        raw = self.header(SRC_HEADER)
        if raw is None:
            return self.topic, self.partition, self.offset
        topic, partition, offset = raw.decode().rsplit("/", 2)
        return topic, int(partition), int(offset)

    def log_time(self) -> int:
        raw = self.header(LOG_TIME_HEADER)
        return int(raw) if raw is not None else self.timestamp
