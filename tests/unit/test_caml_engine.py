"""The caml processor without a broker (CamlDriver): the write path's order, reputation events,
suspension, the hash cache, rate limits, consensus and deactivation, and a restart from the store."""

from __future__ import annotations

import json
from typing import Any

from contracts.avro import decode_rejection
from contracts.caml_records import CamlAuditEntry, CamlEvent, decode_caml
from contracts.topics import TopicNames
from governance.pii import PiiPolicy, PiiVerdict, scan
from governance.pii.implicit_rule import evaluate
from processors.caml.core import CamlDriver
from streams.records import OutRecord
from tests.helpers import offline_client

NAMES = TopicNames()
T0 = 1_790_000_000_000
HOUR = 3_600_000
PATTERN = json.dumps({"signal": "queue wait", "baseline": "2 h", "observed": "9 h", "window": "7 days"})


class _LocalRule:
    """Stage 3 without an LLM: the cascade's own local rule (pure)."""

    def classify(self, text: str) -> Any:
        return evaluate(text)


def _scan(text: str) -> PiiVerdict:
    return scan(text, PiiPolicy(), None, _LocalRule())  # no NER model in unit tests: stage 2 is skipped


def driver(limit: int = 1000) -> CamlDriver:
    return CamlDriver(NAMES, _scan, {"acme": limit, "globex": limit}, 20)


def observe(d: CamlDriver, claw: str, oid: str, at: int, summary: str = "Approval queues stall on Mondays",
            kind: str = "ANOMALY_DETECTED", evidence: int = 3, refs: str | None = None) -> list[OutRecord]:  # fmt: skip
    env = offline_client(claw_id=claw).build("observation", {
        "observationId": oid, "observationType": kind, "domain": "finance", "summary": summary, "pattern": PATTERN,
        "evidence": [f"{refs or oid}-e{i}" for i in range(evidence)]})  # fmt: skip
    from contracts.avro import encode_envelope

    return d.pipe(NAMES.accepted("observation"), encode_envelope(env), at)


def validate(d: CamlDriver, claw: str, oid: str, verdict: str, at: int, tenant: str = "globex") -> list[OutRecord]:
    from contracts.avro import encode_envelope

    env = offline_client(tenant, claw_id=claw).build("validation", {"observationId": oid, "verdict": verdict})
    return d.pipe(NAMES.accepted("validation"), encode_envelope(env), at)


def verdict(out: list[OutRecord]) -> str:
    audit = [decode_caml(o.value, CamlAuditEntry) for o in out if o.topic == NAMES.caml_audit]
    assert len(audit) == 1
    return audit[0].reason_code or audit[0].outcome


def events(out: list[OutRecord]) -> list[CamlEvent]:
    return [decode_caml(o.value, CamlEvent) for o in out if o.topic in (NAMES.caml_events, NAMES.caml_status)]


def reasons(out: list[OutRecord]) -> list[str]:
    return [e.reputation.reason for e in events(out) if e.reputation is not None]


def test_accept_then_reputation_plus_one_and_the_bonus_after_ten() -> None:
    d = driver()
    out = observe(d, "claw-a", "o1", T0)
    assert verdict(out) == "ACCEPTED"
    assert [e.kind for e in events(out)] == ["OBSERVATION_ACCEPTED", "REPUTATION_CHANGED"]
    assert reasons(out) == ["OBSERVATION_ACCEPTED"]
    for i in range(2, 10):
        assert reasons(observe(d, "claw-a", f"o{i}", T0 + i)) == ["OBSERVATION_ACCEPTED"]
    # The tenth accepted write with no PII rejection in 30 days earns the consistency bonus.
    assert reasons(observe(d, "claw-a", "o10", T0 + 10)) == ["OBSERVATION_ACCEPTED", "CONSISTENCY_BONUS"]
    assert reasons(observe(d, "claw-a", "o11", T0 + 11)) == ["OBSERVATION_ACCEPTED"]  # once per 30 days
    score = [e.reputation.score for e in events(d.emitted) if e.reputation][-1]
    assert score == 11 + 10


def test_gates_come_before_the_rate_limit_and_refusals_have_no_later_effect() -> None:
    d = driver(limit=2)
    assert verdict(observe(d, "claw-a", "x1", T0, kind="DOMAIN_SIGNAL")) == "REPUTATION_TOO_LOW"
    assert verdict(observe(d, "claw-a", "x2", T0, evidence=2)) == "INSUFFICIENT_EVIDENCE"
    assert verdict(observe(d, "claw-a", "x3", T0, kind="CONSENSUS_SIGNAL")) == "SYSTEM_ONLY_TYPE"
    assert verdict(observe(d, "claw-a", "o1", T0)) == "ACCEPTED"
    assert verdict(observe(d, "claw-b", "o2", T0 + 1)) == "ACCEPTED"
    limited = observe(d, "claw-a", "o3", T0 + 2)
    assert verdict(limited) == "RATE_LIMITED" and not events(limited)
    audit = decode_caml(next(o.value for o in limited if o.topic == NAMES.caml_audit), CamlAuditEntry)
    assert audit.retry_after_ms == HOUR - 2  # the first counted attempt leaves the window then
    rej = decode_rejection(next(o.value for o in limited if o.topic == NAMES.rejected))
    assert rej.reason_code == "RATE_LIMITED" and rej.original == b"" and rej.original_sha256
    assert verdict(observe(d, "claw-a", "o3", T0 + HOUR + 1)) == "ACCEPTED"  # the window moved on


def test_pii_penalty_cache_and_suspension_on_the_fifth() -> None:
    d = driver()
    leak = "Send invoices to jane.roe{}@globexmail.com"
    out = observe(d, "claw-p", "p0", T0, summary=leak.format(0))
    assert verdict(out) == "PII_REJECTED" and reasons(out) == ["PII_REJECTION"]
    audit = decode_caml(next(o.value for o in out if o.topic == NAMES.caml_audit), CamlAuditEntry)
    assert audit.pii_stage == "regex" and "jane" not in audit.model_dump_json()
    # The same content (summary, pattern, evidence) under another id: the 24 h hash cache refuses it.
    cached = observe(d, "claw-p", "p0b", T0 + 1, summary=leak.format(0), refs="p0")
    assert verdict(cached) == "PII_REJECTED" and reasons(cached) == []  # from the cache: no penalty, not counted
    for i in range(1, 4):
        assert reasons(observe(d, "claw-p", f"p{i}", T0 + i * 1000, summary=leak.format(i))) == ["PII_REJECTION"]
    fifth = observe(d, "claw-p", "p4", T0 + 5000, summary=leak.format(4))
    assert reasons(fifth) == ["PII_REJECTION", "SUSPENSION"]
    assert [o.topic for o in fifth if o.topic == NAMES.caml_status] == [NAMES.caml_status]
    assert verdict(observe(d, "claw-p", "p5", T0 + 6000)) == "CLAW_SUSPENDED"


def test_validations_promote_at_three_and_deactivate_at_five_refutations() -> None:
    d = driver()
    observe(d, "author", "good", T0)
    observe(d, "author", "bad", T0)
    assert verdict(validate(d, "author", "good", "CONFIRMED", T0 + 1, tenant="acme")) == "SELF_VALIDATION"
    # Another deployment of the same operator does not count either: claws are the operator's to mint.
    assert verdict(validate(d, "sibling", "good", "CONFIRMED", T0 + 1, tenant="acme")) == "SELF_VALIDATION"
    assert reasons(validate(d, "v1", "good", "CONFIRMED", T0 + 2)) == ["VALIDATED_BY_OTHER"]
    assert verdict(validate(d, "v1", "good", "REFUTED", T0 + 3)) == "DUPLICATE_VALIDATION"
    assert reasons(validate(d, "v2", "good", "INCONCLUSIVE", T0 + 4)) == []
    assert reasons(validate(d, "v3", "good", "CONFIRMED", T0 + 5)) == ["VALIDATED_BY_OTHER"]
    third = validate(d, "v4", "good", "CONFIRMED", T0 + 6)
    assert reasons(third) == ["VALIDATED_BY_OTHER", "REACHED_CONSENSUS"]
    assert "OBSERVATION_PROMOTED" in [e.kind for e in events(third)]
    for i in range(4):
        assert "OBSERVATION_DEACTIVATED" not in [e.kind for e in events(validate(d, f"r{i}", "bad", "REFUTED", T0))]
    fifth = validate(d, "r4", "bad", "REFUTED", T0 + 10)
    assert reasons(fifth) == ["REFUTED", "HEAVILY_REFUTED"]
    assert verdict(validate(d, "r5", "bad", "CONFIRMED", T0 + 11)) == "OBSERVATION_INACTIVE"
    assert verdict(validate(d, "r5", "nothing", "CONFIRMED", T0 + 12)) == "UNKNOWN_OBSERVATION"


def test_the_scanner_sees_the_pattern_decoded_and_the_id() -> None:
    d = driver()
    hidden = r'{"signal": "ops\u0040globexmail.com wait", "baseline": "b", "observed": "o", "window": "w"}'
    assert "@" not in hidden and "@" in json.loads(hidden)["signal"]  # the JSON text hides it behind an escape
    env = offline_client(claw_id="claw-h").build("observation", {
        "observationId": "h1", "observationType": "ANOMALY_DETECTED", "domain": "finance",
        "summary": "Queue waits", "pattern": hidden, "evidence": ["a", "b", "c"]})  # fmt: skip
    from contracts.avro import encode_envelope

    assert verdict(d.pipe(NAMES.accepted("observation"), encode_envelope(env), T0)) == "PII_REJECTED"
    assert verdict(observe(d, "claw-h", "ask-jane.roe@globexmail.com", T0 + 1)) == "PII_REJECTED"


def test_a_restart_reloads_the_state_from_the_store() -> None:
    d = driver(limit=3)
    observe(d, "claw-r", "r1", T0)
    observe(d, "claw-r", "r2", T0 + 1)
    d.restart()
    # DUPLICATE_OBSERVATION is judged before the rate limit: only r1 and r2 count, one write is left.
    assert verdict(observe(d, "claw-r", "r1", T0 + 2)) == "DUPLICATE_OBSERVATION"
    assert verdict(observe(d, "claw-r", "r3", T0 + 3)) == "ACCEPTED"
    assert verdict(observe(d, "claw-r", "r4", T0 + 4)) == "RATE_LIMITED"
    seqs = [e.reputation.seq for e in events(d.emitted) if e.reputation is not None]
    assert seqs == [1, 2, 3]  # no repeat after the restart
