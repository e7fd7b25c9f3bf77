"""Reading a batch of accepted records, as the stages after the gate do: each one's envelope, with its payload
of the one type the stage takes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from contracts.avro import decode_envelope
from contracts.models import Envelope
from streams.records import LogRecord

P = TypeVar("P")


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
