"""CLAM's internal record: what the clam processor decided, on ``hivemem.clam.events``.

Not a claw envelope: the clam processor runs the perceiver and the critic (an LLM, or their local
deterministic fallbacks) and the garbage collector on each accepted ``clam`` operation, and writes
what came of it here (``contracts/schemas/clam_event/v1.avsc``). The ``clam`` read model folds
these, so a replay rebuilds the memory without calling a model again.
"""

from __future__ import annotations

from typing import Literal

from contracts.avro import ContractError, decode_record, encode_record, registry
from contracts.models import WireModel

FAMILY = "clam_event"
ClamEventKind = Literal["NODE_CREATED", "FACT_STORED", "CRITIQUED", "PROMOTED", "DECAYED", "SEEDED", "NOTHING"]


class ClamEvent(WireModel):
    event_id: str
    tenant: str
    claw_id: str
    at: int
    source: str
    envelope_event_id: str
    seq: int
    kind: ClamEventKind
    concept_id: str = ""
    data: str = "{}"


def encode_clam(event: ClamEvent) -> bytes:
    return encode_record(registry().latest(FAMILY), event.to_wire())


def decode_clam(data: bytes) -> ClamEvent:
    decoded = decode_record(data)
    if decoded.writer.family != FAMILY:
        raise ContractError("TYPE_MISMATCH", f"expected {FAMILY}, got {decoded.writer.family}")
    return ClamEvent.model_validate(decoded.record)
