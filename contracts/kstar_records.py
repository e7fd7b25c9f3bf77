"""KSTAR's internal record: what the kstar processor writes on ``hivemem.kstar.events``.

Not a claw envelope: the kstar processor judges each accepted ``kstar`` operation against the memory
as logged before it and writes the outcome here (``contracts/schemas/kstar_event/v1.avsc``), with the
record as it now reads. The ``kstar`` read model folds these, so a replay rebuilds it without judging
again (and without the wall clock: record times the writer left out are the operation's log time).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from contracts.avro import ContractError, decode_record, encode_record, registry
from contracts.models import WireModel

FAMILY = "kstar_event"
Change = Literal["STORED", "UNCHANGED", "CONFLICT", "FORGOTTEN"]


class KstarEvent(WireModel):
    event_id: str
    tenant: str
    claw_id: str
    memory: str
    at: int
    source: str
    trace_id: str
    envelope_event_id: str
    op_id: str
    op: str
    kind: str
    record_id: str
    change: Change
    document: str = ""
    content_hash: str = ""
    existing_hash: str = ""
    name: str = ""
    record_time: str = ""
    origin: str = "LOCAL"
    origin_ref: str = ""
    forget_kinds: list[str] = Field(default_factory=list)


def encode_kstar(event: KstarEvent) -> bytes:
    return encode_record(registry().latest(FAMILY), event.to_wire())


def decode_kstar(data: bytes) -> KstarEvent:
    decoded = decode_record(data)
    if decoded.writer.family != FAMILY:
        raise ContractError("TYPE_MISMATCH", f"expected {FAMILY}, got {decoded.writer.family}")
    return KstarEvent.model_validate(decoded.record)
