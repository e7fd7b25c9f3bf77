"""The kstar service SIGKILLed mid-stream: every operation gets exactly one verdict, none is lost or
doubled (a skill's usage count, which each outcome bumps, comes out exact), and the KSTAR read model
equals a clean replay of the log."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from hivemem.services import projections
from hivemem.stack import Stack
from projections.replay import rebuild
from tests.conftest import wait_until
from tests.integration.support import client, kill_and_restart, owner_db

pytestmark = pytest.mark.integration


def _count(stack: Stack, sql: str, *args: object) -> int:
    with owner_db(stack) as conn:
        row = conn.execute(sql, args).fetchone()  # type: ignore[arg-type]
    return int(str(row[0])) if row else 0


def test_kstar_service_sigkilled_mid_stream(stack: Stack) -> None:
    tenant, n, tag = "kstar-kill", 400, uuid.uuid4().hex[:6]
    claws = [f"kill-{tag}-{i}" for i in range(3)]
    writers = [client(stack, c, tenant=tenant) for c in claws]
    svc = stack.services["kstar"]
    trace = f"kstarkill-{tag}"

    def op(i: int, memory: str, kind: str, rid: str, doc: dict[str, object], verb: str = "STORE") -> dict[str, str]:
        return {"opId": f"o{i}", "memory": memory, "op": verb, "kind": kind, "recordId": rid,
                "document": json.dumps(doc)}  # fmt: skip

    for w, c in zip(writers, claws, strict=True):
        w.publish_envelope(w.build("kstar", op(0, c, "skill", "sk", {"id": "sk", "name": "grading",
                                                                     "definition": {"procedure": "rubric"}}),
                                   trace_id=trace))  # fmt: skip
    killer = kill_and_restart(svc, 0.3)
    outcomes = {c: 0 for c in claws}
    bad = 0
    for i in range(1, n):
        w, c = writers[i % 3], claws[i % 3]
        if i % 2:
            payload = op(i, c, "skill", "grading", {"outcome": i % 4 == 1}, "SKILL_OUTCOME")
            outcomes[c] += 1
        elif i % 50 == 0:  # a bad one now and then: confidence out of range
            payload = op(i, c, "perception", f"p{i}", {"id": f"p{i}", "content": "x", "confidence": 2})
            bad += 1
        else:
            payload = op(i, c, "perception", f"p{i}", {"id": f"p{i}", "content": f"seen {i}", "confidence": 0.8})
        w.publish_envelope_async(w.build("kstar", payload, trace_id=trace), lambda tok, err: None)
        if i == n // 5:
            killer.start()
        if i % 50 == 0:
            time.sleep(0.05)
    for w in writers:
        assert w.flush(120) == 0
    killer.join()
    judged = "SELECT count(*) FROM kstar.history WHERE tenant = %s AND memory LIKE %s"
    refused = ("SELECT count(*) FROM audit.events WHERE tenant = %s AND trace_id = %s AND outcome = 'REJECTED' "
               "AND stage = 'kstar'")  # fmt: skip

    def verdicts() -> int:
        return _count(stack, judged, tenant, f"kill-{tag}-%") + _count(stack, refused, tenant, trace)

    total = n - 1 + len(claws)
    wait_until(lambda: verdicts() >= total, timeout=180, interval=1, what="a verdict per operation")
    time.sleep(2)
    assert verdicts() == total  # exactly one each: none lost, none doubled
    assert _count(stack, refused, tenant, trace) == bad
    for c in claws:
        assert _count(stack, "SELECT (doc->'maturity'->>'usage_count')::int FROM kstar.records WHERE tenant = %s "
                      "AND memory = %s AND kind = 'skill'", tenant, c) == outcomes[c]  # fmt: skip
    s = stack.settings
    result = rebuild(projections(s)["kstar"], s.require_kafka(), s.require_database(), s.topics)
    assert result.equal and result.records > 0, result.describe()
