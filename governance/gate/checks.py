"""The gate: seed 004's controls that need no quorum, as pure functions.

``check`` judges one inbound record on its own (decode, strict validation, clock skew,
signature, suspension, governance gate, self-loop, partition key). ``settle`` then applies
the two stateful controls, replay prevention and idempotency, from claim owners: a claim
is owned by the first source position that made it, so a record processed again after a
crash finds its own claim and is accepted again with the same output (never DUPLICATE).
``processors.gate.core.GateCore`` runs both over a batch against a claim store.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from contracts.avro import ContractError, decode_record, envelope_from_decoded, signing_bytes
from contracts.header_bytes import signed_bytes
from contracts.models import Envelope
from contracts.positions import LogPosition
from contracts.topics import GOVERNED_TYPES, TopicNames, partition_key
from governance.identity import KeyRefusal, KeyResolver, TenantPolicy
from governance.refusals import InboundRecord, RecordMeta, Reject, bounded

CLOCK_SKEW_MS = 300_000  # seed 000, 13.2: requests within +-300 s of server time
REPLAY_WINDOW_MS = 600_000  # seed 000, 13.2: replay tuples kept 10 minutes
REQUIRED_HEADER = ("type", "eventId", "traceId", "idempotencyKey", "clawId", "instanceId",
                   "tenant", "keyId")  # fmt: skip

Position = LogPosition


@dataclass(frozen=True)
class Claim:
    kind: str  # "replay" | "idem"
    key: str  # SHA-256 hex of what is claimed: bounded, whatever the envelope carries

    @classmethod
    def of(cls, kind: str, *parts: str) -> Claim:
        return cls(kind, hashlib.sha256("|".join(parts).encode()).hexdigest())


@dataclass(frozen=True)
class Accept:
    record: InboundRecord
    envelope: Envelope
    claims: tuple[Claim, ...]


Verdict = Accept | Reject


class Suspensions(Protocol):
    """Deployments suspended at run time (CAML's PII rule), beside the configured ones."""

    def is_suspended(self, tenant: str, claw_id: str) -> bool: ...


class NoSuspensions:
    def is_suspended(self, tenant: str, claw_id: str) -> bool:
        return False


@dataclass(frozen=True)
class GateConfig:
    topics: TopicNames
    tenants: Mapping[str, TenantPolicy]
    keys: KeyResolver
    suspensions: Suspensions = field(default_factory=NoSuspensions)
    system_claw_ids: frozenset[str] = frozenset({"hivemem-gate", "hivemem-governance"})
    clock_skew_ms: int = CLOCK_SKEW_MS
    processor: str = "gate"


def _reject(rec: InboundRecord, code: str, detail: str, env: Envelope | RecordMeta | None = None) -> Reject:
    meta = RecordMeta.of_envelope(env) if isinstance(env, Envelope) else env
    return Reject(rec, code, detail, meta)


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
    # A refusal below keeps what the header says (RecordMeta.of_raw), so its trace can be followed.
    if decoded.writer.family != expected_type or raw.get("type") != expected_type:
        found = f"{decoded.writer.family}/{bounded(raw.get('type'), 40)}"
        return _reject(
            rec, "TYPE_MISMATCH", f"topic carries {expected_type}, record is {found}", RecordMeta.of_raw(raw)
        )
    if raw.get("schemaVersion") != decoded.writer.version:
        detail = f"schemaVersion {bounded(raw.get('schemaVersion'), 20)} but written with v{decoded.writer.version}"
        return _reject(rec, "SCHEMA_VERSION_MISMATCH", detail, RecordMeta.of_raw(raw))
    for name in REQUIRED_HEADER:
        if not raw.get(name):
            return _reject(rec, "MISSING_FIELD", f"required header field {name} is empty", RecordMeta.of_raw(raw))
    if not raw.get("signature"):
        return _reject(rec, "MISSING_FIELD", "required header field signature is empty", RecordMeta.of_raw(raw))
    try:
        env = envelope_from_decoded(decoded)
    except ContractError as exc:
        return _reject(rec, exc.code, exc.detail, RecordMeta.of_raw(raw))
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
    signed = signed_bytes(rec.value, decoded.writer) or signing_bytes(decoded.writer, decoded.writer_record)
    if not verifier.verify(signed, env.signature):
        return _reject(rec, "BAD_SIGNATURE", "signature does not verify", env)
    if env.claw_id in policy.suspended_claws or cfg.suspensions.is_suspended(env.tenant, env.claw_id):
        return _reject(rec, "CLAW_SUSPENDED", f"claw {env.claw_id} is suspended", env)
    if env.type in GOVERNED_TYPES and not policy.governance_enabled:
        return _reject(rec, "GOVERNANCE_DISABLED", f"governance is disabled for {env.tenant}", env)
    if rec.key != partition_key(env.tenant, env.aggregate):
        return _reject(rec, "KEY_MISMATCH", "message key is not tenant/aggregate of the payload", env)
    body_hash = hashlib.sha256(rec.value).hexdigest()
    claims = (
        Claim.of("replay", env.tenant, env.claw_id, str(env.timestamp), body_hash),
        Claim.of("idem", env.tenant, env.idempotency_key),
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
