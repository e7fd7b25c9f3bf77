"""KMP's internal record: what the kmp processor writes on ``hivemem.kmp.events``.

Not a claw envelope: the kmp processor judges each accepted ``kmp_ingest`` and writes the graded
ingest here (``contracts/schemas/kmp_event/v1.avsc``); the ``kmp`` read model folds it. The
grades are data on the log, so a replay rebuilds the read model without judging again.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from contracts.avro import ContractError, decode_record, encode_record, registry
from contracts.models import KmpIngestPayload, WireModel

FAMILY = "kmp_event"


class KmpGrade(WireModel):
    quality: Literal["RICH", "ANEMIC", "STRUCTURAL", "SUSPECT"]
    reason: str


class KmpEvent(WireModel):
    event_id: str
    kind: Literal["INGESTED"] = "INGESTED"
    tenant: str
    claw_id: str
    about: str
    at: int  # log time of the accepted ingest: when HiveMem learnt it (known-at)
    source: str
    trace_id: str
    envelope_event_id: str
    ingest: KmpIngestPayload
    grades: list[KmpGrade] = Field(default_factory=list)
    context_seen: int = 0


def encode_kmp(event: KmpEvent) -> bytes:
    return encode_record(registry().latest(FAMILY), event.to_wire())


def decode_kmp(data: bytes) -> KmpEvent:
    decoded = decode_record(data)
    if decoded.writer.family != FAMILY:
        raise ContractError("TYPE_MISMATCH", f"expected {FAMILY}, got {decoded.writer.family}")
    return KmpEvent.model_validate(decoded.record)
