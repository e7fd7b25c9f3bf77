"""Pydantic models mirroring the Avro schemas in ``contracts/schemas``.

Field names are snake_case in Python and camelCase on the wire (the Avro field names).
"""

from __future__ import annotations

import unicodedata
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from contracts.topics import EnvelopeType

# Documented limits (docs/wire-protocol.md, "Limits"): every string and number that reaches
# Avro, Postgres or a Kafka record has a bound, so oversized input is refused with a reason
# code (INVALID_FIELD) instead of failing deeper in the pipeline.
MAX_ID = 256  # header ids and payload identifiers
MAX_LABEL = 1_024  # tags, capabilities, dimension values, versions
MAX_TEXT = 65_536  # free text (statements, summaries, content)
MAX_ITEMS = 256  # list and map entries
# An episode (KMMS: a session's turns, or a document) is verbatim memory: a chat with a pasted document or log runs
# past MAX_TEXT (LongMemEval-S holds a session of 76,560 characters), and refusing it would lose the session
# whole. Its content and each turn's are bounded by MAX_EPISODE instead; a conversation's envelope carries its
# characters twice (the turns, and their lines joined as ``content``), so 262,144 ASCII characters are about
# 530,000 bytes, under the gateway's 900,000 (a text mostly of 3-byte characters reaches that near 150,000
# characters: 413 PAYLOAD_TOO_LARGE).
MAX_EPISODE = 262_144
# An episode's turns: bounded by its MAX_EPISODE characters, not by a count (each turn's line "role: x" is at least
# 8 characters with its line break, so 262,144 characters hold at most 32,768 of them); a chat day of 300 messages
# is one episode.
MAX_TURNS = MAX_EPISODE // 8


def clean_text(value: str) -> str:
    # Postgres text cannot hold NUL; a lone surrogate cannot be encoded as UTF-8 (Avro).
    if "\x00" in value:
        raise ValueError("must not contain the NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("must be valid Unicode (no lone surrogates)") from exc
    return value


def has_text(value: str) -> str:
    """A question or a query: at least one character that is not white space ("   " asks nothing, and a search of
    it would still rank hits and answer them with confidence)."""
    if not value.strip():
        raise ValueError("holds no text, only white space")
    return value


def speaker_name(value: str) -> str:
    """A speaker's name is one line of text without edge spaces: a turn reads ``role: name: content``
    (``governance.transcripts.turn_line``), so a line break in a name would forge a turn."""
    clean_text(value)
    if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in value):
        raise ValueError("must be one line without control characters (no line break, no tab)")
    if value != value.strip():
        raise ValueError("must not start or end with a space")
    return value


Id = Annotated[str, Field(min_length=1, max_length=MAX_ID), AfterValidator(clean_text)]
Label = Annotated[str, Field(max_length=MAX_LABEL), AfterValidator(clean_text)]
Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT), AfterValidator(clean_text)]
OptText = Annotated[str, Field(max_length=MAX_TEXT), AfterValidator(clean_text)]
EpisodeText = Annotated[str, Field(min_length=1, max_length=MAX_EPISODE), AfterValidator(clean_text)]
SpeakerName = Annotated[str, Field(max_length=MAX_ID), AfterValidator(speaker_name)]  # "" = unnamed
Long = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]  # Avro long
Int = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]  # Avro int


class WireModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid")

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True)


class StrictWireModel(WireModel):
    """A wire model whose JSON types are as declared (``false`` is not 0, ``"1"`` is not 1). The KMP ingest
    payload is one: the HTTP API and MCP take it as it is (``projections/http/kmp_models.py``), so its parts are
    declared once, here, for the log and for the edge."""

    model_config = ConfigDict(strict=True)


class ProposalPayload(WireModel):
    proposal_id: Id
    fact_key: Id
    statement: Text
    tags: list[Label] = Field(default_factory=list, max_length=MAX_ITEMS)
    proposer: Id
    deadline: Long
    base_version: Int = Field(default=0, ge=0)


class VotePayload(WireModel):
    proposal_id: Id
    vote: Literal["YES", "NO"]
    reason: OptText | None = None


class DecisionPayload(WireModel):
    proposal_id: Id
    outcome: Literal["APPROVED", "REJECTED", "EXPIRED"]
    yes_votes: Int = Field(ge=0)
    no_votes: Int = Field(ge=0)
    quorum_basis: Int = Field(ge=0)
    threshold: Int = Field(ge=0)
    voters: list[Id] = Field(default_factory=list)
    decided_at: Long


class FactPayload(WireModel):
    fact_key: Id
    version: Int = Field(ge=1)
    statement: Text
    tags: list[Label] = Field(default_factory=list, max_length=MAX_ITEMS)
    proposal_id: Id | None = None
    supersedes_version: Int | None = None
    valid_from: Long


class PresencePayload(WireModel):
    status: Literal["ACTIVE", "DRAINING", "OFFLINE"] = "ACTIVE"
    healthy: bool = True
    ttl_seconds: Int = Field(default=30, ge=1)
    agent_version: Label = ""


class CapabilitiesPayload(WireModel):
    capabilities: list[Label] = Field(default_factory=list, max_length=MAX_ITEMS)


class IdentityPayload(WireModel):
    """Register (or, with ``replaces``, rotate to) an Ed25519 key, or revoke one."""

    action: Literal["REGISTER", "REVOKE"]
    key_id: Id
    public_key: bytes = Field(default=b"", max_length=64)
    proof: bytes = Field(default=b"", max_length=128)
    replaces: Id | None = None


ObservationType = Literal[
    "ANOMALY_DETECTED", "DOMAIN_SIGNAL", "WORKFLOW_PATTERN", "EFFICIENCY_DELTA", "REGULATORY_SHIFT", "CONSENSUS_SIGNAL",
    "ANOMALY", "DOMAIN", "WORKFLOW", "EFFICIENCY", "REGULATORY", "CONSENSUS",  # v1 names, aliases of the above
]  # fmt: skip
Domain = Literal[
    "legal", "finance", "procurement", "hr", "customer_support", "logistics", "manufacturing",
    "healthcare", "real_estate", "education", "government", "retail", "technology", "general",
]  # fmt: skip


class ObservationPayload(WireModel):
    """A CAML observation (schema v2). ``evidence_count`` is the deprecated v1 field, ignored."""

    observation_id: Id
    observation_type: ObservationType
    domain: Domain
    summary: Text
    pattern: OptText = "{}"
    evidence_count: Int = Field(default=0, ge=0)
    confidence: float = Field(default=0.5, ge=0.0, le=1.0, allow_inf_nan=False)
    evidence: list[Id] = Field(default_factory=list, max_length=MAX_ITEMS)


class ValidationPayload(WireModel):
    """Feedback on a recalled observation; UNCERTAIN (v1) means INCONCLUSIVE."""

    observation_id: Id
    verdict: Literal["CONFIRMED", "REFUTED", "INCONCLUSIVE", "UNCERTAIN"]
    note: OptText | None = None


class EpisodeTurn(WireModel):
    role: Literal["user", "assistant", "system", "tool"]
    content: EpisodeText
    name: SpeakerName = ""  # v3: the speaker (a conversation between people); "" = unnamed


def memory_id(claw_id: str | None, user_id: str) -> str:
    """A memory's id as its episodes and erasures carry it (their payload's ``about``, at most ``MAX_ID``): the
    memory of ``user_id`` ("" = the claw's own) in claw ``claw_id``'s."""
    return f"memory:{claw_id}/{user_id}"


class EpisodePayload(WireModel):
    episode_id: Id
    about: Id
    dimensions: dict[Id, Label] = Field(default_factory=dict, max_length=MAX_ITEMS)
    content: EpisodeText
    occurred_at: Long
    # v2 (KMMS): the scope inside the claw's memory, what the content is, and its turns.
    session_id: Label = ""
    user_id: Label = ""
    thread_id: Label = ""
    content_type: Literal["CONVERSATION", "DOCUMENT", "TOOL_RESULT", "NOTE"] = "NOTE"
    turns: list[EpisodeTurn] = Field(default_factory=list, max_length=MAX_TURNS)


class ErasurePayload(WireModel):
    """KMMS: erase one memory (a user's, or the claw's own) of the writing claw from the read models."""

    erasure_id: Id
    about: Id
    user_id: Label = ""
    reason: OptText = ""


class KmpDimension(StrictWireModel):
    """A memory plane inside an about (session, agent, attempt, incident_phase...): its identity is
    ``about:<about>:dimension:<id>``, so two abouts' ``session:1`` never mix."""

    id: Id
    kind: Label
    title: Label = ""


class KmpCoordinate(StrictWireModel):
    """Where an entry sits in one dimension, with its order there."""

    dimension: Id
    sequence: Long = 0


class KmpEntry(StrictWireModel):
    id: Id
    kind: Label  # objective, observation, hypothesis, decision, action, result, question, next_action, guardrail...
    text: Text
    occurred_at: Long  # when it happened, as the writer says (time navigation); known-at is the log's time
    coordinates: list[KmpCoordinate] = Field(default_factory=list, max_length=MAX_ITEMS)
    valid_from: Long | None = None
    valid_until: Long | None = None
    metadata: dict[Id, Label] = Field(default_factory=dict, max_length=MAX_ITEMS)


class KmpRelation(StrictWireModel):
    """Why two memory items connect, as the writer states it; the kernel grades it, never infers it."""

    source_ref: Id
    target_ref: Id
    rel: Label
    semantic_class: Label
    why: OptText = ""
    evidence_refs: list[Id] = Field(default_factory=list, max_length=MAX_ITEMS)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)


class KmpEvidence(StrictWireModel):
    id: Id
    text: Text
    supports: list[Id] = Field(default_factory=list, max_length=MAX_ITEMS)
    source: Label = ""


class KmpProvenance(StrictWireModel):
    source_kind: Literal["HUMAN", "AGENT", "PROJECTION", "DERIVED"] = "AGENT"
    source_agent: Label = ""
    correlation_id: Label = ""
    causation_id: Label = ""


class KmpIngestPayload(StrictWireModel):
    """KMP ingest (seed 001): structured memory for one about, written by a writer who decided its
    meaning. ``context_refs`` are the refs the writer read before writing (relation quality)."""

    ingest_id: Id
    about: Id
    dimensions: list[KmpDimension] = Field(default_factory=list, max_length=MAX_ITEMS)
    entries: list[KmpEntry] = Field(default_factory=list, max_length=MAX_ITEMS)
    relations: list[KmpRelation] = Field(default_factory=list, max_length=MAX_ITEMS)
    evidence: list[KmpEvidence] = Field(default_factory=list, max_length=MAX_ITEMS)
    provenance: KmpProvenance = Field(default_factory=KmpProvenance)
    context_refs: list[Id] = Field(default_factory=list, max_length=MAX_ITEMS)


KstarKind = Literal["trace", "perception", "fact", "skill", "control_token", "schema", "trace_category", "token_type",
                    "memory"]  # fmt: skip


class KstarPayload(WireModel):
    """One operation on a KSTAR memory (seed 003); ``document`` is the record as JSON text."""

    op_id: Id
    memory: Id
    op: Literal["STORE", "REVOKE", "SKILL_OUTCOME", "REGISTER", "FORGET"]
    kind: KstarKind
    record_id: Annotated[str, Field(max_length=MAX_ID), AfterValidator(clean_text)]
    document: OptText = "{}"
    on_conflict: Literal["DEFAULT", "KEEP", "OVERWRITE"] = "DEFAULT"
    origin: Literal["LOCAL", "IMPORT", "SYNC"] = "LOCAL"
    origin_ref: Label = ""


class ClamTruth(WireModel):
    subject: Id
    predicate: Id
    object: Label


class ClamPayload(WireModel):
    """One operation on the writing claw's CLAM memory (seed 002)."""

    op_id: Id
    op: Literal["PERCEIVE", "TICK", "SEED"]
    prompt: OptText = ""
    response: OptText = ""
    truths: list[ClamTruth] = Field(default_factory=list, max_length=MAX_ITEMS)


class TracePayload(WireModel):
    trace_record_id: Id
    about: Id
    situation: OptText
    task: OptText
    action: OptText
    result: OptText
    outcome: Literal["SUCCESS", "FAILURE", "PARTIAL"]


Payload = (
    ProposalPayload | VotePayload | DecisionPayload | FactPayload | PresencePayload
    | CapabilitiesPayload | ObservationPayload | ValidationPayload | EpisodePayload | TracePayload
    | IdentityPayload | ErasurePayload | KmpIngestPayload | KstarPayload | ClamPayload
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
    "erasure": ErasurePayload,
    "kmp_ingest": KmpIngestPayload,
    "kstar": KstarPayload,
    "clam": ClamPayload,
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
    if isinstance(payload, EpisodePayload | TracePayload | ErasurePayload | KmpIngestPayload):
        return f"about:{payload.about}"
    if isinstance(payload, KstarPayload):
        return f"kstar:{payload.memory}"
    if isinstance(payload, ClamPayload):
        return f"clam:{claw_id}"
    return f"claw:{claw_id}"  # presence, capabilities, identity


class Envelope(WireModel):
    """A typed, signed envelope: the header of seed 004 plus the type's payload."""

    schema_version: Int = Field(ge=1)
    type: EnvelopeType
    event_id: Id
    trace_id: Id
    timestamp: Long
    idempotency_key: Id
    claw_id: Id
    instance_id: Id
    tenant: Id
    key_id: Id
    signature: bytes = Field(default=b"", max_length=512)
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
    original: bytes = b""  # at most the first 64 KiB of the refused record
    original_size: int | None = None
    original_sha256: str | None = None
