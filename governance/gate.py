"""The gate: seed 004's controls that need no quorum, as pure functions.

``check`` judges one inbound record on its own (decode, strict validation, clock skew,
signature, suspension, governance gate, self-loop, partition key). ``settle`` then applies
the two stateful controls, replay prevention and idempotency, from claim owners: a claim
is owned by the first source position that made it, so a record processed again after a
crash finds its own claim and is accepted again with the same output (never DUPLICATE).
``decide`` runs both over a batch against an in-memory ``GateState`` (tests, the driver).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from contracts.avro import ContractError, decode_record, envelope_from_decoded, signing_bytes
from contracts.models import Envelope, Rejection
from contracts.topics import GOVERNED_TYPES, TopicNames, partition_key
from governance.identity import KeyRefusal, KeyResolver, TenantPolicy

CLOCK_SKEW_MS = 300_000  # seed 000, 13.2: requests within +-300 s of server time
REPLAY_WINDOW_MS = 600_000  # seed 000, 13.2: replay tuples kept 10 minutes
REQUIRED_HEADER = ("type", "eventId", "traceId", "idempotencyKey", "clawId", "instanceId",
                   "tenant", "keyId")  # fmt: skip
_ID_NAMESPACE = uuid.UUID("5b0c8f0e-7d0a-4c58-9d1e-2f43a1f6c7a1")


@dataclass(frozen=True, order=True)
class Position:
    topic: str
    partition: int
    offset: int

    def __str__(self) -> str:
        return f"{self.topic}/{self.partition}/{self.offset}"


def derived_event_id(pos: Position) -> str:
    """Deterministic id of an output derived from one input record."""
    return str(uuid.uuid5(_ID_NAMESPACE, str(pos)))


@dataclass(frozen=True)
class InboundRecord:
    position: Position
    log_time: int  # broker append time, ms: the gate's notion of "server time"
    key: bytes | None
    value: bytes | None


@dataclass(frozen=True)
class Claim:
    kind: str  # "replay" | "idem"
    key: str


@dataclass(frozen=True)
class Accept:
    record: InboundRecord
    envelope: Envelope
    claims: tuple[Claim, ...]


@dataclass(frozen=True)
class Reject:
    record: InboundRecord
    code: str
    detail: str
    envelope: Envelope | None = None


Verdict = Accept | Reject


@dataclass(frozen=True)
class GateConfig:
    topics: TopicNames
    tenants: Mapping[str, TenantPolicy]
    keys: KeyResolver
    system_claw_ids: frozenset[str] = frozenset({"hivemem-gate", "hivemem-governance"})
    clock_skew_ms: int = CLOCK_SKEW_MS
    processor: str = "gate"


def _reject(rec: InboundRecord, code: str, detail: str, env: Envelope | None = None) -> Reject:
    return Reject(rec, code, detail, env)


def check(rec: InboundRecord, cfg: GateConfig) -> Verdict:
    """Every control that needs only the record itself and configuration."""
    expected_type = cfg.topics.type_of(rec.position.topic)
    if not rec.value:
        return _reject(rec, "MALFORMED", "empty record value")
    try:
        decoded = decode_record(rec.value)
    except ContractError as exc:
        return _reject(rec, exc.code, exc.detail)
    raw = decoded.record
    if decoded.writer.family != expected_type or raw.get("type") != expected_type:
        found = f"{decoded.writer.family}/{raw.get('type')}"
        return _reject(rec, "TYPE_MISMATCH", f"topic carries {expected_type}, record is {found}")
    if raw.get("schemaVersion") != decoded.writer.version:
        detail = f"schemaVersion {raw.get('schemaVersion')} but written with v{decoded.writer.version}"
        return _reject(rec, "SCHEMA_VERSION_MISMATCH", detail)
    for name in REQUIRED_HEADER:
        if not raw.get(name):
            return _reject(rec, "MISSING_FIELD", f"required header field {name} is empty")
    if not raw.get("signature"):
        return _reject(rec, "MISSING_FIELD", "required header field signature is empty")
    try:
        env = envelope_from_decoded(decoded)
    except ContractError as exc:
        return _reject(rec, exc.code, exc.detail)
    policy = cfg.tenants.get(env.tenant)
    if policy is None:
        return _reject(rec, "UNKNOWN_TENANT", f"tenant {env.tenant!r} is not configured", env)
    if env.claw_id in cfg.system_claw_ids:
        return _reject(rec, "SELF_LOOP", f"{env.claw_id} is a HiveMem processor identity", env)
    skew = env.timestamp - rec.log_time
    if abs(skew) > cfg.clock_skew_ms:
        return _reject(rec, "CLOCK_SKEW", f"timestamp is {skew / 1000:+.0f} s from server time", env)
    verifier = cfg.keys.resolve(env.tenant, env.claw_id, env.key_id, env.timestamp, rec.log_time)
    if verifier is None:
        return _reject(rec, "UNKNOWN_KEY", f"no key {env.key_id!r} for claw {env.claw_id}", env)
    if isinstance(verifier, KeyRefusal):
        return _reject(rec, verifier.code, verifier.detail, env)
    if not verifier.verify(signing_bytes(decoded), env.signature):
        return _reject(rec, "BAD_SIGNATURE", "signature does not verify", env)
    if env.claw_id in policy.suspended_claws:
        return _reject(rec, "CLAW_SUSPENDED", f"claw {env.claw_id} is suspended", env)
    if env.type in GOVERNED_TYPES and not policy.governance_enabled:
        return _reject(rec, "GOVERNANCE_DISABLED", f"governance is disabled for {env.tenant}", env)
    if rec.key != partition_key(env.tenant, env.aggregate):
        return _reject(rec, "KEY_MISMATCH", "message key is not tenant/aggregate of the payload", env)
    body_hash = hashlib.sha256(rec.value).hexdigest()
    claims = (
        Claim("replay", f"{env.tenant}|{env.claw_id}|{env.timestamp}|{body_hash}"),
        Claim("idem", f"{env.tenant}|{env.idempotency_key}"),
    )
    return Accept(rec, env, claims)


_CLAIM_REASON = {"replay": ("REPLAYED", "this exact request was already received"),
                 "idem": ("DUPLICATE", "idempotencyKey was already applied")}  # fmt: skip


def settle(verdict: Verdict, owners: Mapping[Claim, Position]) -> Verdict:
    """Replay and idempotency: a claim owned by another position refuses the record."""
    if isinstance(verdict, Reject):
        return verdict
    for claim in verdict.claims:
        owner = owners.get(claim)
        if owner is not None and owner != verdict.record.position:
            code, detail = _CLAIM_REASON[claim.kind]
            return _reject(verdict.record, code, f"{detail} (first at {owner})", verdict.envelope)
    return verdict


def first_claims(verdicts: Iterable[Verdict]) -> dict[Claim, Position]:
    """The claims a batch makes, each attributed to its earliest position in the batch."""
    wanted: dict[Claim, Position] = {}
    for v in verdicts:
        if isinstance(v, Accept):
            for c in v.claims:
                if c not in wanted or v.record.position < wanted[c]:
                    wanted[c] = v.record.position
    return wanted


@dataclass
class GateState:
    """Claim owners, the gate's only state. The durable twin is a ClaimStore."""

    owners: dict[Claim, Position] = field(default_factory=dict)


def decide(state: GateState, batch: list[InboundRecord], cfg: GateConfig) -> tuple[GateState, list[Verdict]]:
    verdicts = [check(r, cfg) for r in batch]
    owners = dict(state.owners)
    for claim, pos in first_claims(verdicts).items():
        owners.setdefault(claim, pos)
    settled = [settle(v, owners) for v in verdicts]
    return replace(state, owners=owners), settled


def rejection(verdict: Reject, processor: str) -> Rejection:
    env = verdict.envelope
    rec = verdict.record
    return Rejection(
        event_id=derived_event_id(rec.position),
        reason_code=verdict.code,
        detail=verdict.detail,
        processor=processor,
        source_topic=rec.position.topic,
        source_partition=rec.position.partition,
        source_offset=rec.position.offset,
        log_time=rec.log_time,
        tenant=env.tenant if env else None,
        type=env.type if env else None,
        trace_id=env.trace_id if env else None,
        claw_id=env.claw_id if env else None,
        instance_id=env.instance_id if env else None,
        idempotency_key=env.idempotency_key if env else None,
        envelope_event_id=env.event_id if env else None,
        original=rec.value or b"",
    )
