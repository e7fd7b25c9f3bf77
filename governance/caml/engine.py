"""CAML's state machine (seed 000 §6–§8): accepted observe and validate envelopes in, governed
events, audit entries and refusals out. Pure: no Kafka, no SQL, no wall clock — every time is
the broker log time of the input, so a run over the same log reproduces every verdict. The
PII scanner is injected (it runs a model; the rules of what to do with its verdict live here).

Observe, in the seed's order (C-14): 1 identity (the gate checked the signature; a suspended
deployment is refused CLAW_SUSPENDED; an id already in the pool DUPLICATE_OBSERVATION) → 2 type
gates (SYSTEM_ONLY_TYPE, REPUTATION_TOO_LOW, INSUFFICIENT_EVIDENCE, INVALID_PATTERN) → 3 rate
limit per operator (RATE_LIMITED; from here on the attempt counts) → 4 PII cascade
(PII_REJECTED: −10, the content hash cached 24 h, the 5th counted rejection in 24 h suspends
with −25) → accept (OBSERVATION_ACCEPTED; the embedder adds the vector) → reputation +1 (and
the 30-day consistency bonus) → audit. A refusal at step k has no effect of a later step,
except its audit entry.

Validate: identity → rate limit → UNKNOWN_OBSERVATION → SELF_VALIDATION (any deployment of the
author's own operator) → DUPLICATE_VALIDATION
→ OBSERVATION_INACTIVE → record (CONFIRMED v+1 and author +3, REFUTED f+1 and author −5,
INCONCLUSIVE no count) → consensus promotion (+10) or deactivation (−15).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from contracts.caml_records import CamlAuditEntry, CamlEvent, CamlEventKind, CamlObservation, CamlReputation
from contracts.caml_records import CamlValidation as ValidationRecord
from contracts.models import ObservationPayload, ValidationPayload
from governance.caml import rate_limit
from governance.caml.reputation import (
    DELTAS,
    RepReason,
    ReputationConfig,
    apply_delta,
    consistency_bonus_due,
    heavily_refuted,
    reaches_consensus,
    should_suspend,
)
from governance.caml.taxonomy import canonical_kind, observation_refusal
from governance.pii import PiiVerdict

_NS = uuid.UUID("7c1f3a52-9d0e-4b7a-8f61-2a4c5e9b0d13")
CONSENSUS = "CONSENSUS_SIGNAL"
Scanner = Callable[[str], PiiVerdict]


@dataclass
class Deployment:
    tenant: str
    claw: str
    score: float
    seq: int = 0
    suspended: bool = False
    accepted_ms: list[int] = field(default_factory=list)  # the latest few accepted observations
    pii_ms: list[int] = field(default_factory=list)  # the latest few counted PII rejections
    last_bonus_ms: int | None = None
    pii_floor_ms: int = -(2**62)  # a reinstatement forgets the rejections before it


@dataclass
class ObservationState:
    observation_id: str
    tenant: str
    claw: str
    kind: str
    created_ms: int
    validations: int = 0
    refutations: int = 0
    active: bool = True
    promoted: bool = False


@dataclass
class CamlState:
    cfg: ReputationConfig = field(default_factory=ReputationConfig)
    deployments: dict[tuple[str, str], Deployment] = field(default_factory=dict)
    observations: dict[str, ObservationState] = field(default_factory=dict)
    validations: set[tuple[str, str, str]] = field(default_factory=set)  # (observation, tenant, claw)
    rate: dict[str, list[int]] = field(default_factory=dict)  # tenant -> counted attempts, last hour
    pii_cache: dict[tuple[str, str], int] = field(default_factory=dict)  # (tenant, sha256) -> expiry
    # What changed since the last save (the store writes only these).
    dirty_deployments: set[tuple[str, str]] = field(default_factory=set)
    dirty_observations: set[str] = field(default_factory=set)
    new_validations: list[tuple[str, str, str]] = field(default_factory=list)
    new_attempts: list[tuple[str, int]] = field(default_factory=list)
    dirty_pii_cache: set[tuple[str, str]] = field(default_factory=set)

    def deployment(self, tenant: str, claw: str) -> Deployment:
        dep = self.deployments.get((tenant, claw))
        if dep is None:
            dep = self.deployments[(tenant, claw)] = Deployment(tenant, claw, self.cfg.initial)
            self.dirty_deployments.add((tenant, claw))
        return dep

    def clear_dirty(self) -> None:
        self.dirty_deployments.clear()
        self.dirty_observations.clear()
        self.new_validations.clear()
        self.new_attempts.clear()
        self.dirty_pii_cache.clear()


@dataclass(frozen=True)
class Judged:
    """The envelope being judged: who sent it, where it sits on the log, its request hash."""

    tenant: str
    claw: str
    event_id: str
    trace_id: str
    at: int  # broker log time
    source: str  # topic:partition:offset
    request_sha256: str


@dataclass(frozen=True)
class Refusal:
    code: str
    detail: str


@dataclass
class Outcome:
    events: list[CamlEvent]  # for hivemem.caml.events (status events: kind DEPLOYMENT_*)
    audit: CamlAuditEntry
    refusal: Refusal | None = None


def derived_id(source: str, role: str) -> str:
    return str(uuid.uuid5(_NS, f"{source}|{role}"))


def canonical_pattern(pattern: str) -> str:
    return json.dumps(json.loads(pattern), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class CamlEngine:
    def __init__(self, scan: Scanner, limits: Mapping[str, int], default_limit: int) -> None:
        self.scan = scan
        self.limits = limits  # tenant -> writes per hour (its tier)
        self.default_limit = default_limit

    # --- observe ---------------------------------------------------------------------------
    def observe(self, st: CamlState, j: Judged, p: ObservationPayload, latency: Callable[[], float]) -> Outcome:
        dep = st.deployment(j.tenant, j.claw)
        before = dep.score
        kind = canonical_kind(p.observation_type)
        audit = self._audit(j, "OBSERVE", before, observation_id=p.observation_id, kind=kind, domain=p.domain)
        if dep.suspended:
            return self._refuse(audit, latency, "CLAW_SUSPENDED", f"deployment {j.claw} is suspended")
        if p.observation_id in st.observations:
            return self._refuse(audit, latency, "DUPLICATE_OBSERVATION", "an observation with this id exists")
        gate = observation_refusal(kind, dep.score, p.evidence, p.pattern)
        if gate is not None:
            return self._refuse(audit, latency, gate.code, gate.detail)
        limited = self._rate(st, j)
        if limited is not None:
            audit["retry_after_ms"] = limited
            return self._refuse(audit, latency, "RATE_LIMITED", f"operator write limit reached; retry in {limited} ms")
        events: list[CamlEvent] = []
        # Scan what is stored and shown, decoded: the pattern's JSON escapes (\u0040 for @)
        # must not hide anything from the regexes. The id is shown to every operator too.
        content = "\n".join([p.summary, canonical_pattern(p.pattern), *p.evidence])
        digest = hashlib.sha256(content.encode()).hexdigest()  # the same content under a new id is a resubmission
        content = p.observation_id + "\n" + content
        cached = st.pii_cache.get((j.tenant, digest))
        if cached is not None and cached > j.at:  # same code, no penalty, not counted
            audit["pii_stage"] = "cache"
            return self._refuse(audit, latency, "PII_REJECTED", "content refused for personal data earlier")
        verdict = self.scan(content)
        audit["pii_stages_run"] = f"{','.join(verdict.stages_run)}; {verdict.escalation}"
        if not verdict.clean:
            audit["pii_stage"] = verdict.stage_hit
            st.pii_cache[(j.tenant, digest)] = j.at + st.cfg.pii_cache_ms
            st.dirty_pii_cache.add((j.tenant, digest))
            kept = [t for t in dep.pii_ms if t > dep.pii_floor_ms][-(st.cfg.pii_suspend_count - 1) :]
            dep.pii_ms = [*kept, j.at]
            events.append(self._rep(st, dep, RepReason.PII_REJECTION, j, None))
            if should_suspend([t for t in dep.pii_ms if t > dep.pii_floor_ms], j.at, st.cfg):
                dep.suspended = True
                events.append(self._rep(st, dep, RepReason.SUSPENSION, j, None))
                events.append(self._event(j, "DEPLOYMENT_SUSPENDED", j.tenant, j.claw, "status",
                                          reason=f"{st.cfg.pii_suspend_count} PII rejections in 24 h"))  # fmt: skip
            outcome = self._refuse(audit, latency, "PII_REJECTED", "the observation contains personal data")
            outcome.events = events
            return outcome
        obs = ObservationState(p.observation_id, j.tenant, j.claw, kind, j.at)
        st.observations[obs.observation_id] = obs
        st.dirty_observations.add(obs.observation_id)
        record = CamlObservation(observation_id=p.observation_id, observation_type=kind, domain=p.domain,
                                 summary=p.summary, pattern=canonical_pattern(p.pattern), evidence=list(p.evidence),
                                 confidence=p.confidence, created_at=j.at)  # fmt: skip
        events.append(self._event(j, "OBSERVATION_ACCEPTED", j.tenant, j.claw, "accepted", observation=record))
        events.append(self._rep(st, dep, RepReason.OBSERVATION_ACCEPTED, j, obs.observation_id))
        dep.accepted_ms = [*dep.accepted_ms, j.at][-st.cfg.bonus_min_writes :]
        pii = [t for t in dep.pii_ms if t > dep.pii_floor_ms]
        if consistency_bonus_due(dep.accepted_ms, pii, dep.last_bonus_ms, j.at, st.cfg):
            dep.last_bonus_ms = j.at
            events.append(self._rep(st, dep, RepReason.CONSISTENCY_BONUS, j, None))
        return Outcome(events, self._entry(audit, latency))

    # --- validate --------------------------------------------------------------------------
    def validate(self, st: CamlState, j: Judged, p: ValidationPayload, latency: Callable[[], float]) -> Outcome:
        dep = st.deployment(j.tenant, j.claw)
        obs = st.observations.get(p.observation_id)
        audit = self._audit(j, "VALIDATE", dep.score, observation_id=p.observation_id,
                            kind=obs.kind if obs else None)  # fmt: skip
        if dep.suspended:
            return self._refuse(audit, latency, "CLAW_SUSPENDED", f"deployment {j.claw} is suspended")
        limited = self._rate(st, j)
        if limited is not None:
            audit["retry_after_ms"] = limited
            return self._refuse(audit, latency, "RATE_LIMITED", f"operator write limit reached; retry in {limited} ms")
        if obs is None:
            return self._refuse(audit, latency, "UNKNOWN_OBSERVATION", "no such observation in the pool")
        if obs.tenant == j.tenant:  # an operator mints deployments at will: only other operators count
            return self._refuse(audit, latency, "SELF_VALIDATION", "an operator cannot validate its own observations")
        if (obs.observation_id, j.tenant, j.claw) in st.validations:
            return self._refuse(audit, latency, "DUPLICATE_VALIDATION", "this deployment validated it already")
        if not obs.active:
            return self._refuse(audit, latency, "OBSERVATION_INACTIVE", "the observation was deactivated")
        st.validations.add((obs.observation_id, j.tenant, j.claw))
        st.new_validations.append((obs.observation_id, j.tenant, j.claw))
        st.dirty_observations.add(obs.observation_id)
        author = st.deployment(obs.tenant, obs.claw)
        outcome: Literal["CONFIRMED", "REFUTED", "INCONCLUSIVE"] = (
            "CONFIRMED" if p.verdict == "CONFIRMED" else "REFUTED" if p.verdict == "REFUTED" else "INCONCLUSIVE"
        )
        if outcome == "CONFIRMED":
            obs.validations += 1
        elif outcome == "REFUTED":
            obs.refutations += 1
        record = ValidationRecord(observation_id=obs.observation_id, validator_tenant=j.tenant, validator_claw=j.claw,
                                  outcome=outcome, validations=obs.validations,
                                  refutations=obs.refutations)  # fmt: skip
        events = [self._event(j, "VALIDATION_RECORDED", obs.tenant, obs.claw, "validation", validation=record)]
        if outcome == "CONFIRMED":
            events.append(self._rep(st, author, RepReason.VALIDATED_BY_OTHER, j, obs.observation_id))
        elif outcome == "REFUTED":
            events.append(self._rep(st, author, RepReason.REFUTED, j, obs.observation_id))
        if not obs.promoted and reaches_consensus(obs.validations, obs.refutations, st.cfg):
            obs.promoted, obs.kind = True, CONSENSUS
            events.append(self._event(j, "OBSERVATION_PROMOTED", obs.tenant, obs.claw, "promoted",
                                      observation_id=obs.observation_id))  # fmt: skip
            events.append(self._rep(st, author, RepReason.REACHED_CONSENSUS, j, obs.observation_id))
        if obs.active and heavily_refuted(obs.validations, obs.refutations, st.cfg):
            obs.active = False
            events.append(self._event(j, "OBSERVATION_DEACTIVATED", obs.tenant, obs.claw, "deactivated",
                                      observation_id=obs.observation_id))  # fmt: skip
            events.append(self._rep(st, author, RepReason.HEAVILY_REFUTED, j, obs.observation_id))
        return Outcome(events, self._entry(audit, latency))

    # --- operator actions ------------------------------------------------------------------
    def reinstate(self, st: CamlState, tenant: str, claw: str, at: int) -> bool:
        """Lift a suspension (an operator action, X-6); the rejections before it stop counting."""
        dep = st.deployment(tenant, claw)
        if not dep.suspended:
            return False
        dep.suspended = False
        dep.pii_floor_ms = at
        st.dirty_deployments.add((tenant, claw))
        return True

    # --- helpers ---------------------------------------------------------------------------
    def _rate(self, st: CamlState, j: Judged) -> int | None:
        """Count this attempt, or say in how many ms the operator may write again."""
        window = [t for t in st.rate.get(j.tenant, []) if t > j.at - rate_limit.WINDOW_MS]
        decision = rate_limit.decide(window, j.at, self.limits.get(j.tenant, self.default_limit))
        if not decision.allowed:
            st.rate[j.tenant] = window
            return max(1, decision.retry_after_ms)
        st.rate[j.tenant] = [*window, j.at]
        st.new_attempts.append((j.tenant, j.at))
        return None

    def _rep(self, st: CamlState, dep: Deployment, reason: RepReason, j: Judged, obs: str | None) -> CamlEvent:
        nominal = DELTAS[reason]
        dep.score, applied = apply_delta(dep.score, reason)
        dep.seq += 1
        st.dirty_deployments.add((dep.tenant, dep.claw))
        rep = CamlReputation(reason=reason.value, delta=applied, nominal_delta=nominal, score=dep.score,
                             seq=dep.seq, observation_id=obs)  # fmt: skip
        return self._event(j, "REPUTATION_CHANGED", dep.tenant, dep.claw, f"rep:{dep.tenant}/{dep.claw}:{dep.seq}",
                           reputation=rep)  # fmt: skip

    @staticmethod
    def _event(j: Judged, kind: CamlEventKind, tenant: str, claw: str, role: str, **body: object) -> CamlEvent:
        return CamlEvent.model_validate({"event_id": derived_id(j.source, role), "kind": kind, "tenant": tenant,
                                         "claw_id": claw, "at": j.at, "source": j.source, "trace_id": j.trace_id,
                                         **body})  # fmt: skip

    @staticmethod
    def _audit(j: Judged, op: str, score: float, *, observation_id: str | None = None, kind: str | None = None,
               domain: str | None = None) -> dict[str, object]:  # fmt: skip
        """The audit entry's fields so far; ``_entry`` completes them."""
        return {
            "entry_id": derived_id(j.source, "audit"), "tenant": j.tenant, "claw_id": j.claw, "operation": op,
            "outcome": "ACCEPTED", "request_sha256": j.request_sha256, "event_id": j.event_id,
            "trace_id": j.trace_id, "source": j.source, "observation_id": observation_id, "observation_type": kind,
            "domain": domain, "reputation_at_write": score, "at": j.at,
        }  # fmt: skip

    @staticmethod
    def _entry(audit: dict[str, object], latency: Callable[[], float]) -> CamlAuditEntry:
        return CamlAuditEntry.model_validate({**audit, "latency_ms": latency()})

    def _refuse(self, audit: dict[str, object], latency: Callable[[], float], code: str, detail: str) -> Outcome:
        audit.update(outcome="REFUSED", reason_code=code)
        return Outcome([], self._entry(audit, latency), Refusal(code, detail))
