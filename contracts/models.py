"""Pydantic models mirroring the Avro schemas in ``contracts/schemas``.

Field names are snake_case in Python and camelCase on the wire (the Avro field names).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from contracts.topics import EnvelopeType

MAX_TEXT = 65_536


class WireModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid")

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True)


class ProposalPayload(WireModel):
    proposal_id: str = Field(min_length=1)
    fact_key: str = Field(min_length=1)
    statement: str = Field(min_length=1, max_length=MAX_TEXT)
    tags: list[str] = Field(default_factory=list)
    proposer: str = Field(min_length=1)
    deadline: int
    base_version: int = Field(default=0, ge=0)


class VotePayload(WireModel):
    proposal_id: str = Field(min_length=1)
    vote: Literal["YES", "NO"]
    reason: str | None = None


class DecisionPayload(WireModel):
    proposal_id: str = Field(min_length=1)
    outcome: Literal["APPROVED", "REJECTED", "EXPIRED"]
    yes_votes: int = Field(ge=0)
    no_votes: int = Field(ge=0)
    quorum_basis: int = Field(ge=0)
    threshold: int = Field(ge=0)
    voters: list[str] = Field(default_factory=list)
    decided_at: int


class FactPayload(WireModel):
    fact_key: str = Field(min_length=1)
    version: int = Field(ge=1)
    statement: str = Field(min_length=1, max_length=MAX_TEXT)
    tags: list[str] = Field(default_factory=list)
    proposal_id: str | None = None
    supersedes_version: int | None = None
    valid_from: int


class PresencePayload(WireModel):
    status: Literal["ACTIVE", "DRAINING", "OFFLINE"] = "ACTIVE"
    healthy: bool = True
    ttl_seconds: int = Field(default=30, ge=1)
    agent_version: str = ""


class CapabilitiesPayload(WireModel):
    capabilities: list[str] = Field(default_factory=list)


class IdentityPayload(WireModel):
    """Register (or, with ``replaces``, rotate to) an Ed25519 key, or revoke one."""

    action: Literal["REGISTER", "REVOKE"]
    key_id: str = Field(min_length=1)
    public_key: bytes = b""
    proof: bytes = b""
    replaces: str | None = None


ObservationType = Literal["ANOMALY", "DOMAIN", "WORKFLOW", "EFFICIENCY", "REGULATORY", "CONSENSUS"]
Domain = Literal[
    "legal", "finance", "procurement", "hr", "customer_support", "logistics", "manufacturing",
    "healthcare", "real_estate", "education", "government", "retail", "technology", "general",
]  # fmt: skip


class ObservationPayload(WireModel):
    observation_id: str = Field(min_length=1)
    observation_type: ObservationType
    domain: Domain
    summary: str = Field(min_length=1, max_length=MAX_TEXT)
    pattern: str = "{}"
    evidence_count: int = Field(default=1, ge=0)
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)


class ValidationPayload(WireModel):
    observation_id: str = Field(min_length=1)
    verdict: Literal["CONFIRMED", "REFUTED", "UNCERTAIN"]
    note: str | None = None


class EpisodePayload(WireModel):
    episode_id: str = Field(min_length=1)
    about: str = Field(min_length=1)
    dimensions: dict[str, str] = Field(default_factory=dict)
    content: str = Field(min_length=1, max_length=MAX_TEXT)
    occurred_at: int


class TracePayload(WireModel):
    trace_record_id: str = Field(min_length=1)
    about: str = Field(min_length=1)
    situation: str
    task: str
    action: str
    result: str
    outcome: Literal["SUCCESS", "FAILURE", "PARTIAL"]


Payload = (
    ProposalPayload | VotePayload | DecisionPayload | FactPayload | PresencePayload
    | CapabilitiesPayload | ObservationPayload | ValidationPayload | EpisodePayload | TracePayload
    | IdentityPayload
)  # fmt: skip

PAYLOAD_MODELS: dict[str, type[WireModel]] = {
    "proposal": ProposalPayload,
    "vote": VotePayload,
    "decision": DecisionPayload,
    "fact": FactPayload,
    "presence": PresencePayload,
    "capabilities": CapabilitiesPayload,
    "observation": ObservationPayload,
    "validation": ValidationPayload,
    "episode": EpisodePayload,
    "trace": TracePayload,
    "identity": IdentityPayload,
}


def aggregate_id(envelope_type: str, payload: WireModel, claw_id: str) -> str:
    """The aggregate an envelope belongs to; with the tenant it forms the partition key.

    Votes share their proposal's key so one partition sees a proposal and all its votes.
    """
    if isinstance(payload, ProposalPayload | VotePayload | DecisionPayload):
        return f"proposal:{payload.proposal_id}"
    if isinstance(payload, FactPayload):
        return f"fact:{payload.fact_key}"
    if isinstance(payload, ObservationPayload | ValidationPayload):
        return f"observation:{payload.observation_id}"
    if isinstance(payload, EpisodePayload | TracePayload):
        return f"about:{payload.about}"
    return f"claw:{claw_id}"  # presence, capabilities, identity


class Envelope(WireModel):
    """A typed, signed envelope: the header of seed 004 plus the type's payload."""

    schema_version: int = Field(ge=1)
    type: EnvelopeType
    event_id: str
    trace_id: str
    timestamp: int
    idempotency_key: str
    claw_id: str
    instance_id: str
    tenant: str
    key_id: str
    signature: bytes = b""
    payload: Payload

    @model_validator(mode="before")
    @classmethod
    def _payload_for_type(cls, data: Any) -> Any:
        # Build the payload model named by `type`, never a look-alike from the union.
        if isinstance(data, dict):
            kind = data.get("type")
            raw = data.get("payload")
            model = PAYLOAD_MODELS.get(kind) if isinstance(kind, str) else None
            if model is not None and isinstance(raw, dict):
                data = {**data, "payload": model.model_validate(raw)}
        return data

    @model_validator(mode="after")
    def _payload_matches_type(self) -> Envelope:
        if not isinstance(self.payload, PAYLOAD_MODELS[self.type]):
            raise ValueError(f"payload is not a {self.type} payload")
        return self

    def unsigned(self) -> Envelope:
        return self.model_copy(update={"signature": b""})

    @property
    def aggregate(self) -> str:
        return aggregate_id(self.type, self.payload, self.claw_id)


class Rejection(WireModel):
    """A refused inbound record (topic ``rejected``)."""

    event_id: str
    reason_code: str
    detail: str
    processor: str
    source_topic: str
    source_partition: int
    source_offset: int
    log_time: int
    tenant: str | None = None
    type: str | None = None
    trace_id: str | None = None
    claw_id: str | None = None
    instance_id: str | None = None
    idempotency_key: str | None = None
    envelope_event_id: str | None = None
    original: bytes = b""
