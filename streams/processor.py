"""The processor contract: what the runtime needs of a gate, a governance step or a projector."""

from __future__ import annotations

import traceback
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from streams.offsets import Conn
from streams.records import LogRecord, OutRecord

PROCESSING_ERROR = "PROCESSING_ERROR"


class Outage(Exception):
    """Raised by a processor when something it needs is unreachable (an embeddings server, a model): not
    the records' fault, so the runtime treats it as an outage — the batch is redone after a backoff — and
    never refuses a record over it."""


_REF_NS = uuid.UUID("6a1f3c1e-2b7d-4e0a-9f51-8c2d4b7e9a03")


@dataclass(frozen=True)
class Failure:
    """Why a processor could not take one record. ``reference`` (deterministic: the same
    record fails with the same reference on a replay) is what a refusal shows; the error
    itself goes only to the log and ``hivemem.processing_failures``, never its content."""

    processor: str
    record: LogRecord
    reference: str
    error: str

    @classmethod
    def of(cls, processor: str, record: LogRecord, exc: BaseException) -> Failure:
        ref = "err-" + uuid.uuid5(_REF_NS, f"{processor}|{record.position}").hex[:16]
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return cls(processor, record, ref, text[:2000])

    @property
    def detail(self) -> str:
        return f"the {self.processor} processor failed on this record; reference {self.reference}"


class Processor(Protocol):
    """A stream processor. ``process`` runs inside the runtime's Postgres transaction, on the
    connection given to ``open``; it must keep its effects in that transaction (or in memory,
    reloaded by ``open``) and return its outputs rather than send them."""

    @property
    def name(self) -> str:
        """Its offsets, outbox rows, lock and progress are keyed by this name."""
        ...

    def input_topics(self) -> list[str]: ...

    def open(self, conn: Conn) -> None:
        """Bind to ``conn`` and (re)load in-memory state from it. Called after connecting and
        after every rollback, inside the transaction when there is one."""
        ...

    def process(self, records: Sequence[LogRecord], now_ms: int) -> list[OutRecord]:
        """Apply records (possibly none: a tick) and return the outputs they cause."""
        ...

    def refuse(self, failure: Failure) -> list[OutRecord]:
        """Outputs that give a record ``process`` could not take its verdict (may be none)."""
        ...


class Copartitioned(Processor, Protocol):
    """A processor split over instances whose state follows its partitions (``streams.group``): marked
    ``parallel`` and ``copartitioned``, told by the runtime which input partitions it holds."""

    def partitions_changed(self, conn: Conn, held: frozenset[tuple[str, int]]) -> None:
        """Called between batches after the group assigned or revoked partitions, and with none before the
        first assignment: (re)load the state the held partitions need, as last committed."""
        ...
