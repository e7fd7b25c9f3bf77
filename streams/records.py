"""Records as processors see them, independent of the Kafka client that carries them."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import Message

from contracts.positions import LogPosition, PositionError

# Headers on processor outputs, so every downstream row can name its source record.
SRC_HEADER = "hm-src"  # LogPosition text of the inbound record
LOG_TIME_HEADER = "hm-log-time"  # broker append time of the inbound record, ms
OUT_HEADER = "hm-out"  # "<processor>:<outbox seq>": lets a restarted processor find what it already sent


@dataclass(frozen=True)
class LogRecord:
    """A consumed record."""

    topic: str
    partition: int
    offset: int
    timestamp: int  # ms; topics use LogAppendTime, so this is the broker's clock
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()

    @property
    def position(self) -> LogPosition:
        return LogPosition(self.topic, self.partition, self.offset)

    def header(self, name: str) -> bytes | None:
        for k, v in self.headers:
            if k == name:
                return v
        return None

    def source(self) -> LogPosition:
        """The inbound record this one was derived from (itself if it has no hm-src)."""
        raw = self.header(SRC_HEADER)
        if raw is None:
            return self.position
        try:
            return LogPosition.parse(raw)
        except PositionError:
            # Records written before 0.2 used topic/partition/offset.
            topic, partition, offset = raw.decode().rsplit("/", 2)
            return LogPosition(topic, int(partition), int(offset))

    def log_time(self) -> int:
        raw = self.header(LOG_TIME_HEADER)
        return int(raw) if raw is not None else self.timestamp


@dataclass(frozen=True)
class OutRecord:
    """What a processor emits; the runtime stores it in the outbox, then sends it."""

    topic: str
    partition: int
    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...] = ()


def _bytes(v: str | bytes | None) -> bytes:
    return v.encode() if isinstance(v, str) else (v or b"")


def from_message(m: Message) -> LogRecord:
    headers = tuple((str(h[0]), _bytes(h[1])) for h in (m.headers() or []))
    return LogRecord(str(m.topic()), int(m.partition() or 0), int(m.offset() or 0), int(m.timestamp()[1]),
                     m.key(), m.value(), headers)  # fmt: skip
