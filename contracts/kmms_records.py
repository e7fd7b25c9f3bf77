"""KMMS's internal records: what the kmms processors write on ``hivemem.kmms.*``.

Not claw envelopes: HiveMem's own processors produce them and the ``kmms`` read model folds them.
Everything a model computed (enrichment, summaries, facts, abstractions, vectors) is here as data,
so a replay rebuilds the read model without calling a model. The Avro schemas are
``contracts/schemas/kmms_*/v<N>.avsc``; these models mirror the latest.
"""

from __future__ import annotations

from typing import Literal, TypeVar

from pydantic import Field

from contracts.avro import ContractError, decode_record, encode_record, registry
from contracts.models import WireModel

KmmsEventKind = Literal[
    "EPISODE_STORED", "EPISODE_ENRICHED", "NODE_CREATED", "NODE_SUPERSEDED", "NODE_REINFORCED", "NODE_VERIFIED",
    "CONTRADICTION_LOGGED", "MEMORY_ERASED",
]  # fmt: skip


class KmmsTurn(WireModel):
    role: str
    content: str
    name: str = ""  # kmms_event v2: the speaker's name; "" = unnamed (a v1 turn)


class KmmsEpisode(WireModel):
    episode_id: str
    session_id: str
    thread_id: str
    content_type: str
    occurred_at: int
    content: str
    content_hash: str
    turns: list[KmmsTurn] = Field(default_factory=list)
    redacted: list[str] = Field(default_factory=list)


class KmmsEntity(WireModel):
    name: str
    kind: str
    score: float


class KmmsEnrichment(WireModel):
    episode_id: str
    entities: list[KmmsEntity] = Field(default_factory=list)
    topics: list[str] = Field(default_factory=list)
    primary_entity: str
    primary_topic: str
    model: str


class KmmsNode(WireModel):
    node_id: str
    layer: int
    entity: str
    topic: str
    time_window: str | None = None
    content: str
    version: int
    supersedes: str | None = None
    valid_from: int
    event_time: int
    fact_key: str | None = None
    fact_value: str | None = None
    fact_type: str | None = None
    confidence: float
    context: str | None = None
    source_ids: list[str] = Field(default_factory=list)
    model: str


class KmmsEvent(WireModel):
    event_id: str
    kind: KmmsEventKind
    tenant: str
    claw_id: str
    scope: str
    at: int
    source: str
    trace_id: str
    episode: KmmsEpisode | None = None
    enrichment: KmmsEnrichment | None = None
    node: KmmsNode | None = None
    node_id: str | None = None
    related_id: str | None = None
    detail: str | None = None
    value: float | None = None


class KmmsEmbedding(WireModel):
    unit_id: str
    tenant: str
    claw_id: str
    scope: str
    model: str
    vector: list[float]
    source: str
    voice: str = ""  # v2: "asked" | "told" | "reply" | "" (set until 2026-12-05; "" since)
    tokens: bytes = b""  # v3: the text's content pieces' states (governance/token_states.py); b"" for none


KmmsRecord = KmmsEvent | KmmsEmbedding
FAMILY: dict[type[WireModel], str] = {KmmsEvent: "kmms_event", KmmsEmbedding: "kmms_embedding"}
R = TypeVar("R", KmmsEvent, KmmsEmbedding)


def encode_kmms(record: KmmsRecord) -> bytes:
    return encode_record(registry().latest(FAMILY[type(record)]), record.to_wire())


def decode_kmms(data: bytes, model: type[R]) -> R:
    decoded = decode_record(data)
    if decoded.writer.family != FAMILY[model]:
        raise ContractError("TYPE_MISMATCH", f"expected {FAMILY[model]}, got {decoded.writer.family}")
    return model.model_validate(decoded.record)
