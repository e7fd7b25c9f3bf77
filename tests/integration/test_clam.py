"""CLAM end to end (envelope -> gate -> clam processor -> clam read model -> HTTP): seed truths only
into an empty graph, facts dual-written, a claim confirmed by the critic until it is promoted with a
link, a contradicted claim losing points, an unconfirmed one forgotten after the (test-short) decay
time, the knowledge rendered in five languages, tenants kept apart; then the service SIGKILLed
mid-stream and a replay of the log equal to the live read model."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
import pytest

from hivemem.services import projections
from hivemem.stack import Stack
from projections.replay import rebuild
from tests.conftest import wait_until
from tests.integration.support import client, http, kill_and_restart, owner_db

pytestmark = pytest.mark.integration
WAIT = "wait_ms=20000"


def ok(r: httpx.Response) -> Any:
    assert r.status_code == 200, r.text
    return r.json()


def kinds(out: dict[str, Any]) -> list[str]:
    assert out["status"] == "DONE", out
    return [e["kind"] for e in out["events"]]


def perceive(h: httpx.Client, prompt: str, response: str = "Noted.") -> dict[str, Any]:
    out: dict[str, Any] = ok(h.post(f"/clam/v1/perceive?{WAIT}", json={"prompt": prompt, "response": response}))
    return out


def test_learning_loop(stack: Stack) -> None:
    with http(stack, "clam-a", f"clam-{uuid.uuid4().hex[:6]}") as h:
        seeded = ok(h.post(f"/clam/v1/seed?{WAIT}", json={"truths": [
            {"subject": "User", "predicate": "is_named", "object": "Marcello Mangione"},
            {"subject": "User", "predicate": "age", "object": "60"}]}))  # fmt: skip
        assert kinds(seeded) == ["SEEDED"]
        again = ok(h.post(f"/clam/v1/seed?{WAIT}", json={"truths": [{"subject": "User", "predicate": "age",
                                                                      "object": "61"}]}))  # fmt: skip
        assert kinds(again) == ["NOTHING"]  # only into an empty graph
        # A fact goes straight to the graph and semantic memory (dual-write), no critic.
        assert "FACT_STORED" in kinds(perceive(h, "I use an ESP32 for the greenhouse sensors."))
        # A claim goes to the short-term buffer; exchanges that restate it make it withstand the critic.
        claim = "The server IP is 192.168.1.10"
        assert kinds(perceive(h, f"{claim}.")) == ["NODE_CREATED"]
        first = perceive(h, "Can you ping the server at 192.168.1.10?", "The server IP is 192.168.1.10, it answers.")
        assert kinds(first)[0] == "CRITIQUED" and "withstands" in first["events"][0]["text"]
        second = perceive(h, "Is the server IP still 192.168.1.10?", "Yes, the server IP is 192.168.1.10.")
        assert "PROMOTED" in kinds(second)  # score 3 = the promotion threshold
        mind = ok(h.get("/clam/v1/mind"))
        assert mind["counts"]["volatile"] == 0 and mind["counts"]["semantic"] == 2 and mind["counts"]["triples"] == 3
        assert {n["description"] for n in mind["ltm"]} >= {claim}
        # An unconfirmed claim is forgotten once idle past the decay time (3 s in the test stack) with a low score.
        assert kinds(perceive(h, "My favourite editor might be vim.")) == ["NODE_CREATED"]
        time.sleep(3.5)
        assert "DECAYED" in kinds(ok(h.post(f"/clam/v1/gc?{WAIT}")))
        assert ok(h.get("/clam/v1/mind"))["counts"]["volatile"] == 0
        rendered = {
            lang: ok(h.get(f"/clam/v1/knowledge?language={lang}"))["text"] for lang in ("it", "en", "de", "fr", "es")
        }
        assert all("Marcello Mangione" in text and "60" in text for text in rendered.values())
        assert len(set(rendered.values())) == 5  # localised labels
        assert h.get("/clam/v1/knowledge?language=pt").json()["code"] == "UNKNOWN_LANGUAGE"
        # No LLM in the test stack: auto and local render locally; asking for the LLM says there is none.
        assert ok(h.get("/clam/v1/knowledge?renderer=local"))["renderer"] == "local"
        assert ok(h.get("/clam/v1/knowledge"))["renderer"] == "local"
        no_llm = h.get("/clam/v1/knowledge?renderer=llm")
        assert no_llm.status_code == 409 and no_llm.json()["code"] == "LLM_NOT_CONFIGURED"
        log = ok(h.get("/clam/v1/activity?limit=50"))
        assert {"SEEDED", "FACT_STORED", "NODE_CREATED", "CRITIQUED", "PROMOTED", "DECAYED"} <= {e["kind"] for e in log}
    with http(stack, "clam-b", "other") as h:
        assert ok(h.get("/clam/v1/mind"))["counts"] == {"volatile": 0, "semantic": 0, "episodic": 0, "triples": 0}


def test_clam_service_sigkilled_mid_stream_and_replay(stack: Stack) -> None:
    tenant, n, tag = "clam-kill", 200, uuid.uuid4().hex[:6]
    writers = [client(stack, f"kill-{tag}-{i}", tenant=tenant) for i in range(2)]
    svc = stack.services["kstar"]  # the kstar service runs the clam processor too

    killer = kill_and_restart(svc, 0.3)
    for i in range(n):
        w = writers[i % 2]
        prompt = f"The server IP is 10.0.0.{i % 7}."
        w.publish_envelope_async(w.build("clam", {"opId": f"o{i}", "op": "PERCEIVE", "prompt": prompt,
                                                  "response": "Noted."}), lambda tok, err: None)  # fmt: skip
        if i == n // 5:
            killer.start()
        if i % 40 == 0:
            time.sleep(0.05)
    for w in writers:
        assert w.flush(120) == 0
    killer.join()
    sql = "SELECT count(DISTINCT envelope_event_id) FROM clam.activity WHERE tenant = %s"

    def judged() -> int:
        with owner_db(stack) as conn:
            row = conn.execute(sql, (tenant,)).fetchone()
        return int(str(row[0])) if row else 0

    wait_until(lambda: judged() >= n, timeout=180, interval=1, what="every operation judged")
    time.sleep(2)
    assert judged() == n
    with owner_db(stack) as conn:
        failures = conn.execute("SELECT count(*) FROM audit.events WHERE tenant = %s AND reason_code = "
                                "'PROCESSING_ERROR'", (tenant,)).fetchone()  # fmt: skip
    assert failures is not None and failures[0] == 0
    s = stack.settings
    result = rebuild(projections(s)["clam"], s.require_kafka(), s.require_database(), s.topics)
    assert result.equal and result.records > 0, result.describe()
