"""The stages after the gate: reading a batch of accepted records (each one's envelope, with its payload of the one
type the stage takes), and the shape of a stage whose state lives in a store bound to the runtime's connection."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Generic, TypeVar

from contracts.avro import decode_envelope
from contracts.models import Envelope
from contracts.topics import TopicNames
from processors.refusals import stage_rejection
from streams.offsets import Conn
from streams.processor import PROCESSING_ERROR, Failure
from streams.records import LogRecord, OutRecord

P = TypeVar("P")
S = TypeVar("S")


class AcceptedStage(Generic[S]):
    """A stage reading the gate's ``accepted`` topic of its kind, its state in ``store``: an in-memory one until the
    runtime calls ``open``, then ``postgres(conn)``, which reads and writes per batch inside the runtime's
    transaction (the processor contract, streams/processor.py)."""

    accepted: ClassVar[str]  # the kind of accepted topic it reads (TopicNames.accepted)
    stage: ClassVar[str]  # the stage its refusals name
    names: TopicNames
    store: S

    def postgres(self, conn: Conn) -> S:
        raise NotImplementedError

    def input_topics(self) -> list[str]:
        return [self.names.accepted(self.accepted)]

    def open(self, conn: Conn) -> None:
        self.store = self.postgres(conn)

    def rejected(self, rec: LogRecord, code: str, detail: str) -> OutRecord:
        return stage_rejection(self.names, self.stage, rec, code, detail)

    def refuse(self, failure: Failure) -> list[OutRecord]:
        return [self.rejected(failure.record, PROCESSING_ERROR, failure.detail)]


def decode_accepted(records: Sequence[LogRecord], payload: type[P], stage: str) -> list[tuple[LogRecord, Envelope, P]]:
    """(record, envelope, payload) for each record, in order; ``ValueError`` (the record's failure) for an
    envelope of another type: the gate routes only the stage's own types to its topic."""
    decoded: list[tuple[LogRecord, Envelope, P]] = []
    for rec in records:
        env = decode_envelope(rec.value or b"")
        if not isinstance(env.payload, payload):
            raise ValueError(f"{stage} cannot take a {env.type} envelope")
        decoded.append((rec, env, env.payload))
    return decoded
