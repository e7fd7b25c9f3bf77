"""Collective memory end to end: claws -> HTTP/Kafka -> gate -> caml -> embedder -> Postgres -> recall."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from hivemem.stack import Stack
from producers.caml_client import CamlError, collective_memory
from tests.conftest import wait_until
from tests.integration.caml_support import ANOMALY_PATTERN, anomaly, caml, claw_of, evidence, rep_history
from tests.integration.support import client, http, owner_db

pytestmark = pytest.mark.integration


def _recall_ids(c, query: str, **kw) -> list[str]:  # type: ignore[no-untyped-def]
    return [h.observation_id for h in c.recall(query, k=10, **kw)]


def test_observe_recall_validate_across_operators_until_consensus(stack: Stack) -> None:
    tag = uuid.uuid4().hex[:6]
    author = caml(stack, "caml-a")
    oid = anomaly(author, f"Vendor {tag} invoices wait for a second approver far longer since the ERP upgrade")
    anomaly(author, "Courier pickups in the north depot run late on Mondays", domain="logistics")
    reader = caml(stack, "caml-b")
    query = f"why are vendor {tag} invoice approvals slow after the ERP upgrade?"
    hits = wait_until(lambda: [h for h in reader.recall(query, k=5) if h.observation_id == oid], what="recallable")
    hit = hits[0]
    # Another operator sees the pool's content, not the author's identity or evidence.
    assert not hit.own and hit.author.startswith("dep-") and hit.observation_type == "ANOMALY_DETECTED"
    raw = reader._http.post("/caml/v1/recall", json={"query": query, "k": 5}).json()["results"]
    assert all("evidence" not in r or r["evidence"] is None for r in raw if r["observationId"] == oid)
    assert reader.recall(query, k=5)[0].observation_id == oid  # the best match ranks first
    block = collective_memory(reader.recall(query, k=5), min_score=0.0)
    assert block.startswith("<collective_memory>") and 'type="ANOMALY_DETECTED"' in block

    validators = [reader, caml(stack, "caml-c"), caml(stack, "caml-c")]
    for v in validators[:2]:
        assert v.validate(oid, "CONFIRMED") is not None
    with pytest.raises(CamlError) as dup:
        validators[0].validate(oid, "CONFIRMED")
    assert (dup.value.status, dup.value.code) == (409, "DUPLICATE_VALIDATION")
    for own_operator in (author, caml(stack, "caml-a")):  # the author, or any claw of its operator
        with pytest.raises(CamlError) as own:
            own_operator.validate(oid, "CONFIRMED")
        assert (own.value.status, own.value.code) == (403, "SELF_VALIDATION")
    validators[2].validate(oid, "CONFIRMED")  # the third: 3 validations, ratio 1.0 >= 0.75 -> consensus
    reasons = [r for r, _, _ in rep_history(stack, "caml-a", claw_of(author), 6)]
    assert reasons == ["OBSERVATION_ACCEPTED", "OBSERVATION_ACCEPTED", "VALIDATED_BY_OTHER", "VALIDATED_BY_OTHER",
                       "VALIDATED_BY_OTHER", "REACHED_CONSENSUS"]  # fmt: skip
    assert rep_history(stack, "caml-a", claw_of(author))[-1][2] == 1 + 1 + 3 * 3 + 10
    promoted = wait_until(lambda: [h for h in reader.recall(query, k=5) if h.observation_id == oid
                                   and h.observation_type == "CONSENSUS_SIGNAL"], what="promotion")  # fmt: skip
    assert promoted[0].validations == 3 and promoted[0].author_reputation == 21
    with http(stack, "caml-a") as h:
        me = h.get("/caml/v1/operators/me").json()
    assert me["tier"] == "pro" and me["writesPerHour"] == 1000
    assert [d["reputation"] for d in me["deployments"] if d["clawId"] == claw_of(author)] == [21]


def test_heavily_refuted_observation_is_deactivated_and_leaves_recall(stack: Stack) -> None:
    tag = uuid.uuid4().hex[:6]
    author = caml(stack, "caml-a")
    oid = anomaly(author, f"Warehouse {tag} scanners drop pallets from inventory every night at midnight")
    query = f"warehouse {tag} scanners dropping pallets"
    reader = caml(stack, "caml-b")
    wait_until(lambda: oid in _recall_ids(reader, query), what="recallable")
    for i in range(5):
        caml(stack, "caml-b" if i % 2 else "caml-c").validate(oid, "REFUTED")
    # f=5, v=0: 5 >= 5 and 1.0 >= 0.6 -> inactive, never recalled again; -5 per refutation, -15 once, clamped at 0.
    # The 5th verdict is the validation's; the deactivation it causes is folded right after it (the suite once
    # recalled the observation in between), so wait for it, then it must stay out.
    wait_until(lambda: oid not in _recall_ids(reader, query), timeout=10, what="deactivated")
    history = rep_history(stack, "caml-a", claw_of(author), 7)
    assert [r for r, _, _ in history] == ["OBSERVATION_ACCEPTED", *["REFUTED"] * 5, "HEAVILY_REFUTED"]
    assert history[-1][2] == 0.0
    with pytest.raises(CamlError) as gone:
        caml(stack, "caml-c").validate(oid, "CONFIRMED")
    assert gone.value.code == "OBSERVATION_INACTIVE"
    assert oid not in _recall_ids(reader, query)


@pytest.mark.parametrize(
    ("stage", "text", "secret"),
    [
        ("regex", "Escalations go to ops.{tag}@globexmail.com when the approval queue stalls", "ops.{tag}"),
        ("ner", "Jonathan Whitfield approved every late invoice ({tag}) for the Lisbon office himself", "Whitfield"),
        (
            "local-rule",
            "The patient in Mumbai who is 45 years old with diabetes missed three refills ({tag})",
            "45 years old with diabetes",
        ),
    ],
)
def test_pii_is_refused_with_422_and_leaves_no_trace(stack: Stack, stage: str, text: str, secret: str) -> None:
    tag = uuid.uuid4().hex[:10]
    text, secret = text.format(tag=tag), secret.format(tag=tag)
    c = caml(stack, "caml-c")
    refused_evidence = evidence()
    with pytest.raises(CamlError) as refused:
        c.observe("ANOMALY_DETECTED", "finance", text, pattern=ANOMALY_PATTERN, evidence=refused_evidence)
    err = refused.value
    assert (err.status, err.code) == (422, "PII_REJECTED")
    assert secret not in err.detail
    # The same content again: refused from the 24 h hash cache, with no further penalty.
    with pytest.raises(CamlError) as again:
        c.observe("ANOMALY_DETECTED", "finance", text, pattern=ANOMALY_PATTERN, evidence=refused_evidence)
    assert (again.value.status, again.value.code) == (422, "PII_REJECTED")
    claw = claw_of(c)
    assert [r for r, _, _ in rep_history(stack, "caml-c", claw)] == ["PII_REJECTION"]
    with owner_db(stack) as conn:
        audit = conn.execute("SELECT pii_stage, row_to_json(a)::text FROM caml.caml_audit_log a WHERE tenant = %s "
                             "AND claw_id = %s", ("caml-c", claw)).fetchall()  # fmt: skip
        rejected = conn.execute("SELECT row_to_json(e)::text FROM audit.events e WHERE tenant = %s AND claw_id = %s",
                                ("caml-c", claw)).fetchall()  # fmt: skip
        pool = conn.execute("SELECT count(*) FROM caml.caml_observations WHERE summary LIKE %s",
                            (f"%{secret}%",)).fetchone()  # fmt: skip
    assert sorted(str(a[0]) for a in audit) == sorted([stage, "cache"])
    assert rejected and all(secret not in str(r[0]) for r in rejected + audit)
    assert pool is not None and pool[0] == 0
    logs = "".join(p.read_text(errors="replace") for p in (stack.settings.home / "logs").glob("*"))
    assert secret not in logs


def test_five_pii_rejections_suspend_the_deployment_and_the_gate_enforces_it(stack: Stack) -> None:
    c = caml(stack, "caml-c")
    claw = claw_of(c)
    leak = f"Send the report to ops-{uuid.uuid4().hex[:6]}@globexmail.com"
    for i in range(5):
        with pytest.raises(CamlError) as e:
            c.observe("ANOMALY_DETECTED", "finance", f"{leak} (attempt {i})", pattern=ANOMALY_PATTERN,
                      evidence=evidence())  # fmt: skip
        assert e.value.code == "PII_REJECTED"
    reasons = [r for r, _, _ in rep_history(stack, "caml-c", claw, 6)]
    assert reasons == ["PII_REJECTION"] * 5 + ["SUSPENSION"]
    with pytest.raises(CamlError) as suspended:
        anomaly(c, "Dock doors left open overnight raise cooling costs")
    assert (suspended.value.status, suspended.value.code) == (403, "CLAW_SUSPENDED")
    # The gate refuses the claw's other envelopes too, once it has read the suspension.
    kafka_claw = client(stack, claw, tenant="caml-c")
    trace = f"susp-{uuid.uuid4().hex[:6]}"

    def refused_at_gate() -> bool:
        kafka_claw.publish("presence", {"status": "ACTIVE"}, trace_id=trace)
        with owner_db(stack) as conn:
            row = conn.execute("SELECT count(*) FROM audit.events WHERE trace_id = %s AND reason_code = "
                               "'CLAW_SUSPENDED' AND stage = 'gate'", (trace,)).fetchone()  # fmt: skip
        return bool(row and int(str(row[0])) > 0)

    wait_until(refused_at_gate, timeout=30, interval=0.5, what="gate refuses the suspended claw")
    with http(stack, "caml-c") as h:
        deps = {d["clawId"]: d for d in h.get("/caml/v1/operators/me").json()["deployments"]}
        assert deps[claw]["suspended"] is True
        # The operator lifts it; the claw may observe again.
        assert h.post(f"/caml/v1/operators/me/deployments/{claw}/reinstate").status_code == 202
    wait_until(lambda: _observes(c), timeout=30, interval=0.5, what="reinstated claw observes")


def _observes(c) -> bool:  # type: ignore[no-untyped-def]
    try:
        anomaly(c, f"Reinstated deployment notes {uuid.uuid4().hex[:6]} pallet scanner drift")
        return True
    except CamlError as e:
        assert e.code == "CLAW_SUSPENDED"
        return False


def test_type_gates_and_the_free_tier_rate_limit(stack: Stack) -> None:
    c = caml(stack, "caml-free")
    cases = [
        (("DOMAIN_SIGNAL", "retail", "Returns of winter boots rise early this year"), {}, 403, "REPUTATION_TOO_LOW"),
        (("CONSENSUS_SIGNAL", "retail", "Everyone agrees"), {}, 422, "SYSTEM_ONLY_TYPE"),
        (("ANOMALY_DETECTED", "retail", "Returns spike"), {"evidence": evidence(2)}, 422, "INSUFFICIENT_EVIDENCE"),
        (("ANOMALY_DETECTED", "retail", "Returns spike"), {"pattern": {"signal": 3}}, 422, "INVALID_PATTERN"),
    ]
    for args, extra, status, code in cases:
        kw: dict[str, Any] = {"pattern": ANOMALY_PATTERN, "evidence": evidence(), **extra}  # type: ignore[dict-item]
        with pytest.raises(CamlError) as e:
            c.observe(*args, **kw)
        assert (e.value.status, e.value.code) == (status, code)
    # Refused before the rate limit: those did not count. The free tier allows 20 writes an hour.
    for i in range(20):
        anomaly(c, f"Free tier observation {i}: store {uuid.uuid4().hex[:4]} sees returns double on Mondays")
    with pytest.raises(CamlError) as limited:
        anomaly(c, "One too many")
    assert (limited.value.status, limited.value.code) == (429, "RATE_LIMITED")
    assert limited.value.retry_after_s is not None and 1 <= limited.value.retry_after_s <= 3600


def test_caml_reads_are_tenant_isolated(stack: Stack) -> None:
    author = caml(stack, "caml-a")
    oid = anomaly(author, f"Isolation check {uuid.uuid4().hex[:6]}: freight quotes expire before approval")
    claw = claw_of(author)
    with http(stack, "caml-b") as other, http(stack, "caml-a") as own:
        assert other.get(f"/caml/v1/operators/me/deployments/{claw}/reputation").json() == []
        assert own.get(f"/caml/v1/operators/me/deployments/{claw}/reputation").json()[0]["reason"] == (
            "OBSERVATION_ACCEPTED")  # fmt: skip
        assert claw not in json.dumps(other.get("/caml/v1/operators/me").json())
    with owner_db(stack) as conn:
        entry = conn.execute("SELECT entry_id FROM caml.caml_audit_log WHERE observation_id = %s",
                             (oid,)).fetchone()  # fmt: skip
    assert entry is not None
    # Audit entries: an app-role session of another tenant sees none of them.
    from psycopg import connect

    from hivemem.settings import Settings

    settings: Settings = stack.settings
    with connect(settings.app_database_url(settings.load_config()), autocommit=True) as app, app.transaction():
        app.execute("SELECT set_config('hivemem.tenant', 'caml-b', true)")
        seen = app.execute("SELECT count(*) FROM caml.caml_audit_log WHERE observation_id = %s", (oid,)).fetchone()
    assert seen is not None and seen[0] == 0
