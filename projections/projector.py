"""Read models on the stream runtime: fold Kafka records into Postgres, exactly once in effect.

A ``ProjectionProcessor`` is a processor (``streams.processor``) without outputs: its fold
runs in the runtime's batch transaction, which also advances its stored offsets, so a crash
before the commit re-reads the batch and a re-delivered record changes nothing. A record the
fold cannot take is recorded in ``hivemem.processing_failures`` (with a reference) and
skipped, never fatal. See ``streams.runtime`` for the commit protocol.
"""

from __future__ import annotations

from collections.abc import Sequence

from contracts.topics import TopicNames
from projections.first_statistics import FirstStatistics
from projections.read_models import Projection
from streams.offsets import Conn
from streams.processor import Failure
from streams.records import LogRecord, OutRecord


class ProjectionProcessor:
    def __init__(self, projection: Projection, names: TopicNames, *, schema: str | None = None,
                 name: str | None = None) -> None:  # fmt: skip
        self.projection = projection
        self.names = names
        self.schema = schema or projection.name
        self.name = name or projection.name
        self._conn: Conn | None = None
        self._statistics = FirstStatistics(self.schema, [t.table for t in projection.tables])

    def input_topics(self) -> list[str]:
        return self.projection.topics(self.names)

    def open(self, conn: Conn) -> None:
        self._conn = conn

    def process(self, records: Sequence[LogRecord], now_ms: int) -> list[OutRecord]:
        if records:
            assert self._conn is not None
            with self._conn.cursor() as cur:
                self.projection.fold(cur, self.schema, list(records))
            self._statistics.maybe_analyze(self._conn)
        return []

    def refuse(self, failure: Failure) -> list[OutRecord]:
        return []  # the runtime has recorded it in hivemem.processing_failures
