"""The caml processor and the embedder SIGKILLed mid-stream: every envelope judged once, every
accepted observation embedded once, and the CAML read model equal to a clean replay."""

from __future__ import annotations

import time
import uuid

import pytest

from hivemem.services import projections
from hivemem.stack import Stack
from projections.replay import rebuild
from tests.conftest import wait_until
from tests.integration.caml_support import ANOMALY_PATTERN
from tests.integration.support import client, kill_and_restart, owner_db

pytestmark = pytest.mark.integration


def _count(stack: Stack, sql: str, *args: object) -> int:
    with owner_db(stack) as conn:
        row = conn.execute(sql, args).fetchone()  # type: ignore[arg-type]
    return int(str(row[0])) if row else 0


def test_caml_service_sigkilled_mid_stream(stack: Stack) -> None:
    tenant, n, tag = "caml-kill", 300, uuid.uuid4().hex[:6]
    claws = [client(stack, f"kill-{tag}-{i}", tenant=tenant) for i in range(6)]
    svc = stack.services["caml"]

    killer = kill_and_restart(svc, 0.5)
    leaks = 0
    for i in range(n):
        c = claws[i % len(claws)]
        summary = f"Batch {tag} item {i}: cold chain sensors in depot {i % 7} report drift after firmware updates"
        if i % 25 == 3:  # some refused for personal data (two per claw: five would suspend it)
            summary += f" (contact qa{i}@globexmail.com)"
            leaks += 1
        env = c.build("observation", {
            "observationId": f"obs-{tag}-{i}", "observationType": "ANOMALY_DETECTED", "domain": "logistics",
            "summary": summary, "pattern": '{"baseline": "0.1", "observed": "0.9", "signal": "drift", '
            '"window": "7 days"}', "evidence": [f"t{i}a", f"t{i}b", f"t{i}c"]}, trace_id=f"kill-{tag}")  # fmt: skip
        c.publish_envelope_async(env, lambda tok, err: None)
        if i == n // 4:
            killer.start()
        if i % 50 == 0:
            time.sleep(0.05)
    for c in claws:
        assert c.flush(120) == 0
    killer.join()
    assert ANOMALY_PATTERN  # the same pattern shape as the HTTP tests, written as JSON text here

    judged = "SELECT count(*) FROM caml.caml_audit_log WHERE tenant = %s AND trace_id = %s AND operation = 'OBSERVE'"
    wait_until(lambda: _count(stack, judged, tenant, f"kill-{tag}") >= n, timeout=240, interval=1, what="all judged")
    with owner_db(stack) as conn:
        rows = conn.execute("SELECT coalesce(reason_code, outcome), count(*) FROM caml.caml_audit_log "
                            "WHERE trace_id = %s GROUP BY 1", (f"kill-{tag}",)).fetchall()  # fmt: skip
    verdicts = {str(code): int(str(count)) for code, count in rows}
    assert verdicts == {"ACCEPTED": n - leaks, "PII_REJECTED": leaks}
    accepted = n - leaks
    embedded = ("SELECT count(*) FROM caml.caml_obs_embeddings e JOIN caml.caml_observations o USING (observation_id) "
                "WHERE o.tenant = %s AND o.observation_id LIKE %s")  # fmt: skip
    wait_until(lambda: _count(stack, embedded, tenant, f"obs-{tag}-%") >= accepted, timeout=240, interval=1,
               what="all embedded")  # fmt: skip
    time.sleep(1)
    # Exactly one verdict per envelope, one embedding per accepted observation.
    assert _count(stack, judged, tenant, f"kill-{tag}") == n
    assert _count(stack, "SELECT count(DISTINCT event_id) FROM caml.caml_audit_log WHERE trace_id = %s",
                  f"kill-{tag}") == n  # fmt: skip
    assert _count(stack, embedded, tenant, f"obs-{tag}-%") == accepted
    assert _count(stack, "SELECT count(*) FROM caml.caml_observations WHERE observation_id LIKE %s",
                  f"obs-{tag}-%") == accepted  # fmt: skip
    # Reputation histories have no gaps and no repeats: seq runs 1..max for every deployment.
    assert _count(stack, "SELECT count(*) FROM (SELECT claw_id FROM caml.caml_rep_events WHERE tenant = %s "
                  "GROUP BY claw_id HAVING count(*) <> max(seq) OR min(seq) <> 1) g", tenant) == 0  # fmt: skip
    caml_model = projections(stack.settings)["caml"]
    s = stack.settings
    result = rebuild(caml_model, s.require_kafka(), s.require_database(), s.topics)
    assert result.equal and result.records > 0, result.describe()
