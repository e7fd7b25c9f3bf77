"""CAML's internal records: what the caml processor, the embedder and the Merkle job write.

These are not claw envelopes (no signature header): they are produced by HiveMem's own
processors on internal topics (``hivemem.caml.*``), and read models fold them. The Avro
schemas are ``contracts/schemas/caml_*/v1.avsc``; these models mirror them.
"""

from __future__ import annotations

from typing import Literal, TypeVar

from pydantic import Field

from contracts.avro import ContractError, decode_record, encode_record, registry
from contracts.models import WireModel

CamlEventKind = Literal[
    "OBSERVATION_ACCEPTED", "VALIDATION_RECORDED", "OBSERVATION_PROMOTED", "OBSERVATION_DEACTIVATED",
    "REPUTATION_CHANGED", "DEPLOYMENT_SUSPENDED", "DEPLOYMENT_REINSTATED",
]  # fmt: skip


class CamlObservation(WireModel):
    observation_id: str
    observation_type: str
    domain: str
    summary: str
    pattern: str
    evidence: list[str] = Field(default_factory=list)
    confidence: float
    created_at: int


class CamlValidation(WireModel):
    observation_id: str
    validator_tenant: str
    validator_claw: str
    outcome: Literal["CONFIRMED", "REFUTED", "INCONCLUSIVE"]
    validations: int
    refutations: int


class CamlReputation(WireModel):
    reason: str
    delta: float
    nominal_delta: float
    score: float
    seq: int
    observation_id: str | None = None


class CamlEvent(WireModel):
    event_id: str
    kind: CamlEventKind
    tenant: str
    claw_id: str
    at: int
    source: str
    trace_id: str
    observation: CamlObservation | None = None
    validation: CamlValidation | None = None
    reputation: CamlReputation | None = None
    observation_id: str | None = None
    reason: str | None = None


class CamlAuditEntry(WireModel):
    entry_id: str
    tenant: str
    claw_id: str
    operation: Literal["OBSERVE", "VALIDATE", "RECALL", "OPERATOR"]
    outcome: Literal["ACCEPTED", "REFUSED", "SERVED"]
    reason_code: str | None = None
    request_sha256: str
    event_id: str | None = None
    trace_id: str | None = None
    source: str | None = None
    observation_id: str | None = None
    observation_type: str | None = None
    domain: str | None = None
    result_count: int | None = None
    pii_stage: str | None = None
    pii_stages_run: str | None = None
    reputation_at_write: float | None = None
    retry_after_ms: int | None = None
    latency_ms: float
    at: int


class CamlEmbedding(WireModel):
    observation_id: str
    tenant: str
    model: str
    vector: list[float]
    source: str


class CamlMerkleRoot(WireModel):
    day: str
    scope: str
    size: int
    root: str
    computed_at: int


CamlRecord = CamlEvent | CamlAuditEntry | CamlEmbedding | CamlMerkleRoot
FAMILY: dict[type[WireModel], str] = {
    CamlEvent: "caml_event",
    CamlAuditEntry: "caml_audit",
    CamlEmbedding: "caml_embedding",
    CamlMerkleRoot: "caml_root",
}
R = TypeVar("R", CamlEvent, CamlAuditEntry, CamlEmbedding, CamlMerkleRoot)


def encode_caml(record: CamlRecord) -> bytes:
    return encode_record(registry().latest(FAMILY[type(record)]), record.to_wire())


def decode_caml(data: bytes, model: type[R]) -> R:
    decoded = decode_record(data)
    if decoded.writer.family != FAMILY[model]:
        raise ContractError("TYPE_MISMATCH", f"expected {FAMILY[model]}, got {decoded.writer.family}")
    return model.model_validate(decoded.record)
