"""A record's place in the log: one type, one text form.

``topic:partition:offset`` (e.g. ``hivemem.vote:2:417``) is the only text form, used in
consistency tokens, in the ``hm-src`` header of processor outputs, in audit rows and in
read-model keys. Kafka topic names cannot contain ``:``, so the form parses unambiguously.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_OFFSET = 2**63 - 1
_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")  # Kafka's legal topic names


class PositionError(ValueError):
    """Text that is not ``topic:partition:offset``."""


@dataclass(frozen=True, order=True)
class LogPosition:
    topic: str
    partition: int
    offset: int

    def __str__(self) -> str:
        return f"{self.topic}:{self.partition}:{self.offset}"

    @classmethod
    def parse(cls, text: str | bytes) -> LogPosition:
        if isinstance(text, bytes):
            try:
                text = text.decode()
            except UnicodeDecodeError as exc:
                raise PositionError("a log position is ASCII text") from exc
        parts = text.rsplit(":", 2)
        if len(parts) != 3 or not _TOPIC.match(parts[0]):
            raise PositionError("expected topic:partition:offset")
        topic, partition, offset = parts
        if not (partition.isascii() and partition.isdigit() and offset.isascii() and offset.isdigit()):
            raise PositionError("partition and offset are non-negative integers")
        if len(partition) > 6 or len(offset) > 19 or int(offset) > MAX_OFFSET:
            raise PositionError("partition or offset out of range")
        return cls(topic, int(partition), int(offset))

    def encode(self) -> bytes:
        return str(self).encode()
