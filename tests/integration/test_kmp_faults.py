"""The kmp service SIGKILLed mid-stream: every ingest gets exactly one verdict, none is lost or
doubled, refs stay consistent, and the KMP read model equals a clean replay of the log."""

from __future__ import annotations

import time
import uuid

import pytest

from hivemem.services import projections
from hivemem.stack import Stack
from projections.replay import rebuild
from tests.conftest import wait_until
from tests.integration.support import client, kill_and_restart, owner_db

pytestmark = pytest.mark.integration
T0 = 1_767_225_600_000


def _count(stack: Stack, sql: str, *args: object) -> int:
    with owner_db(stack) as conn:
        row = conn.execute(sql, args).fetchone()  # type: ignore[arg-type]
    return int(str(row[0])) if row else 0


def test_kmp_service_sigkilled_mid_stream(stack: Stack) -> None:
    tenant, n, tag = "kmp-kill", 300, uuid.uuid4().hex[:6]
    writers = [client(stack, f"kill-{tag}-{i}", tenant=tenant) for i in range(3)]
    svc = stack.services["kmp"]

    killer = kill_and_restart(svc, 0.3)
    for i in range(n):
        about = f"case-{tag}-{i % 10}"
        prev = f"e{i - 10}" if i >= 10 else None  # each about is a chain: entry i follows entry i-10
        payload = {"ingestId": f"in-{i}", "about": about, "contextRefs": [prev] if prev else [],
                   "entries": [{"id": f"e{i}", "kind": "action", "text": f"step {i} of {about}",
                                "occurredAt": T0 + i * 1000}],
                   "relations": [{"sourceRef": f"e{i}", "targetRef": prev, "rel": "follows",
                                  "semanticClass": "PROCEDURAL"}] if prev else []}  # fmt: skip
        if i % 50 == 7:  # a bad one now and then: its target does not exist
            payload["relations"] = [{"sourceRef": f"e{i}", "targetRef": "ghost", "rel": "follows",
                                     "semanticClass": "PROCEDURAL"}]  # fmt: skip
        w = writers[(i % 10) % 3]  # one writer per about: its chain reaches the partition in order
        w.publish_envelope_async(w.build("kmp_ingest", payload, trace_id=f"kmpkill-{tag}"), lambda tok, err: None)
        if i == n // 5:
            killer.start()
        if i % 50 == 0:
            time.sleep(0.05)
    for w in writers:
        assert w.flush(120) == 0
    killer.join()
    bad = [i for i in range(n) if i % 50 == 7]
    # A refused entry leaves a hole in its chain: the next ones pointing at it are refused too.
    ingested = "SELECT count(*) FROM kmp.kmp_ingests WHERE tenant = %s AND about LIKE %s"
    refused = ("SELECT count(*) FROM audit.events WHERE tenant = %s AND trace_id = %s AND outcome = 'REJECTED' "
               "AND stage = 'kmp'")  # fmt: skip

    def verdicts() -> int:
        return _count(stack, ingested, tenant, f"case-{tag}-%") + _count(stack, refused, tenant, f"kmpkill-{tag}")

    wait_until(lambda: verdicts() >= n, timeout=180, interval=1, what="a verdict per ingest")
    time.sleep(2)
    assert verdicts() == n  # exactly one each: none lost, none doubled
    holes = {i + 10 * k for i in bad for k in range(0, (n - i) // 10 + 1) if i + 10 * k < n}
    assert _count(stack, ingested, tenant, f"case-{tag}-%") == n - len(holes)
    assert _count(stack, "SELECT count(*) FROM kmp.kmp_entries WHERE tenant = %s AND about LIKE %s", tenant,
                  f"case-{tag}-%") == n - len(holes)  # fmt: skip
    assert _count(stack, "SELECT count(*) FROM audit.events WHERE tenant = %s AND trace_id = %s AND reason_code = "
                  "'PROCESSING_ERROR'", tenant, f"kmpkill-{tag}") == 0  # fmt: skip
    s = stack.settings
    result = rebuild(projections(s)["kmp"], s.require_kafka(), s.require_database(), s.topics)
    assert result.equal and result.records > 0, result.describe()
