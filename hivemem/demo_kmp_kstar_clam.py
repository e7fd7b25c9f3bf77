"""The demo's second half, each through the HTTP API as a claw would call it: process memory (KMP) asked
why and traced, a claw's KSTAR memory exported to a signed bundle, verified and imported by another
claw, and CLAM learning from an exchange; then where the dashboard is."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import httpx
from rich.console import Console

from hivemem.settings import Settings
from projections.auth import mint_token

T = TypeVar("T")
TENANT = "acme"
MIN = 60_000


def api(settings: Settings, api_url: str, claw: str) -> httpx.Client:
    """An API client with a token bound to one claw of the demo's tenant."""
    token = mint_token(settings.load_config().token_secret, TENANT, "demo", claw)
    return httpx.Client(base_url=api_url, headers={"Authorization": f"Bearer {token}"}, timeout=60)


def until(read: Callable[[], T | None], timeout_s: float = 60) -> T | None:
    """``read()`` again until it gives something (a write is judged behind its answer when it said 202)."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = read()
        if got is not None or time.monotonic() >= deadline:
            return got
        time.sleep(0.2)


def _entry(ref: str, kind: str, text: str, at: int) -> dict[str, Any]:
    return {"id": ref, "kind": kind, "text": text, "occurredAt": at, "coordinates": [{"dimension": "session:1"}]}


def _rel(src: str, dst: str, rel: str, cls: str, why: str, evidence: list[str]) -> dict[str, Any]:
    return {"sourceRef": src, "targetRef": dst, "rel": rel, "semanticClass": cls, "why": why, "evidenceRefs": evidence}


def run_kmp(settings: Settings, api_url: str, console: Console) -> bool:
    """An incident told to KMP in one ingest (entries, evidence, relations with their why), then asked
    why the team rolled back, and traced from the fix back to the cause."""
    about = f"checkout-e142-{uuid.uuid4().hex[:6]}"
    t0 = int(time.time() * 1000) - 30 * MIN
    ingest = {
        "about": about,
        "dimensions": [{"id": "session:1", "kind": "session", "title": "triage"}],
        "entries": [
            _entry("obs-e142", "observation", "Checkout fails with error E142 on 4 % of requests.", t0),
            _entry(
                "cause-pool",
                "observation",
                "Deploy v42 shrank the database connection pool from 50 to 5.",
                t0 + 5 * MIN,
            ),
            _entry("dec-rollback", "decision", "Roll checkout back to v41.", t0 + 8 * MIN),
            _entry("res-fixed", "result", "E142 is back under 0.1 % after the rollback.", t0 + 20 * MIN),
        ],
        "evidence": [
            {
                "id": "ev-diff",
                "text": "deploy v42 diff: db.pool.max_size 50 -> 5",
                "source": "git",
                "supports": ["cause-pool", "dec-rollback"],
            },
            {
                "id": "ev-dash",
                "text": "Grafana: E142 rate 0.05 % at 10:20",
                "source": "grafana",
                "supports": ["res-fixed"],
            },
        ],
        "relations": [
            _rel("obs-e142", "cause-pool", "caused_by", "CAUSAL", "the pool wait matches the failures", ["ev-diff"]),
            _rel(
                "dec-rollback", "cause-pool", "chosen_because", "MOTIVATIONAL", "v41 has the old pool size", ["ev-diff"]
            ),
            _rel("res-fixed", "obs-e142", "resolves", "CAUSAL", "the error rate fell after the rollback", ["ev-dash"]),
        ],
        "provenance": {"sourceKind": "AGENT", "sourceAgent": "triage-agent"},
    }
    with api(settings, api_url, "claw-3") as http:
        wrote = http.post("/kmp/v1/ingest", json=ingest)
        verdict = wrote.json()
        quality = verdict.get("quality") or {}
        console.print(
            f"claw-3 told KMP what happened on {about}: 4 entries, 2 pieces of evidence, 3 relations "
            f"-> {verdict.get('status') or verdict.get('code')} ({quality.get('rich', 0):.0f} rich relations)"
        )
        question = {"about": about, "question": "Why did we roll checkout back?"}

        def answered() -> dict[str, Any] | None:
            got: dict[str, Any] = http.post("/kmp/v1/ask", json=question).json()
            return got if got.get("answerRef") else None

        ask = until(answered) or {}
        proof = ask.get("proof") or {}
        because = "; ".join(f"{b['claim']} ({b['ref']})" for b in ask.get("because", [])[:2])
        console.print(f"Why did we roll checkout back? -> {ask.get('answer')!r} (confidence "
                      f"{proof.get('confidence')}, evidence {[e.get('ref') for e in proof.get('evidence', [])]}); "
                      f"because: {because or '-'}")  # fmt: skip
        trace = http.post("/kmp/v1/trace", json={"about": about, "from": "res-fixed", "to": "cause-pool"}).json()
    path = " ".join(f"{r['sourceRef']} -{r['rel']}->" for r in trace.get("trace", []))
    console.print(f"Trace from the fix to the cause: {path} {trace['trace'][-1]['targetRef'] if path else '(none)'}")
    ok = (wrote.status_code == 200 and ask.get("answerRef") == "dec-rollback" and proof.get("confidence") == "HIGH"
          and trace.get("hops") == 2)  # fmt: skip
    if ok:
        console.print("[green]Outcome: the decision answered with its evidence and reason; the path from fix to "
                      "cause traced.[/green]")  # fmt: skip
    else:
        console.print(f"[red]Outcome: unexpected KMP answers[/red] ingest={verdict} ask={ask} trace={trace}")
    return ok


def run_kstar(settings: Settings, api_url: str, console: Console) -> bool:
    """claw-2 stores a trace and a perception in its KSTAR memory, exports it (a signed kstar-bundle),
    verifies the bundle, and claw-4 imports it, twice: the second import changes nothing."""
    tag = uuid.uuid4().hex[:6]
    trace = {"id": f"tr-{tag}", "timestamp": "2026-01-31T10:00:00Z",
             "situation": {"domain": "operations.incident", "actor": "claw-2"},
             "task": {"goal": "find why checkout fails with E142"},
             "action": {"type": "query", "parameters": {"table": "orders", "window": "1h"}},
             "result": {"success": True, "outcome": {"failed_orders": 412}}}  # fmt: skip
    perception = {"id": f"pe-{tag}", "type": "observation", "subject": "service:checkout",
                  "content": "Checkout orders fail when the database pool is exhausted", "confidence": 0.9,
                  "evidence": [trace["id"]]}  # fmt: skip
    with api(settings, api_url, "claw-2") as author, api(settings, api_url, "claw-4") as reader:
        stored = [author.post("/kstar/v1/traces", json=trace).json().get("status"),
                  author.post("/kstar/v1/perceptions", json=perception).json().get("status")]  # fmt: skip
        console.print(f"claw-2 stored a trace and a perception in its KSTAR memory: {', '.join(map(str, stored))}")

        def exported() -> dict[str, Any] | None:
            bundle: dict[str, Any] = author.post("/kstar/v1/export", json={}).json()
            held = {r.get("id") for section in bundle.get("memory", {}).values() for r in section}
            return bundle if {trace["id"], perception["id"]} <= held else None

        bundle = until(exported) or {}
        stats = bundle.get("statistics", {})
        console.print(f"claw-2 exported its memory: a kstar-bundle of {stats.get('trace_count')} trace(s), "
                      f"{stats.get('perception_count')} perception(s), checksum "
                      f"{bundle.get('integrity', {}).get('checksum', '?')[:19]}...")  # fmt: skip
        check = reader.post("/kstar/v1/verify-bundle", json={"bundle": bundle}).json()
        console.print(f"claw-4 verified it: valid {check.get('valid')}, signed {check.get('signed')} "
                      f"(claw-2's issuer key)")  # fmt: skip
        first = reader.post("/kstar/v1/import", json={"bundle": bundle}).json()
        again = reader.post("/kstar/v1/import", json={"bundle": bundle}).json()
    console.print(f"claw-4 imported it: {first.get('importedCount')} imported, {first.get('unchanged')} unchanged; "
                  f"again: {again.get('importedCount')} imported, {again.get('unchanged')} unchanged")  # fmt: skip
    ok = (stored == ["STORED", "STORED"] and check.get("valid") is True and check.get("signed") is True
          and not first.get("refused") and not first.get("pending") and first.get("importedCount", 0) >= 2
          and again.get("importedCount") == 0)  # fmt: skip
    if ok:
        console.print("[green]Outcome: a memory moved between claws as a signed, verified bundle; importing it "
                      "twice changed nothing.[/green]")  # fmt: skip
    else:
        console.print(f"[red]Outcome: unexpected KSTAR results[/red] stored={stored} check={check} "
                      f"import={first} again={again}")  # fmt: skip
    return ok


def run_clam(settings: Settings, api_url: str, console: Console) -> bool:
    """claw-1 perceives a claim (a short-term node, score 1), then an exchange that restates it: the
    critic finds no contradiction and the node gains a point."""
    host = f"db-{uuid.uuid4().hex[:6]}"
    claim = f"The checkout database host is {host}."
    with api(settings, api_url, "claw-1") as http:
        first = http.post("/clam/v1/perceive", json={"prompt": claim, "response": "Noted."}).json()
        node = next((e for e in first.get("events", []) if e["kind"] == "NODE_CREATED"), None)
        console.print(f"claw-1 perceived {claim!r}: {node['kind'] if node else first.get('status')}, "
                      f"a short-term node with confidence score 1")  # fmt: skip
        restated = {"prompt": f"Is {host} still the checkout database host?",
                    "response": f"Yes, the checkout database host is {host}."}  # fmt: skip
        second = http.post("/clam/v1/perceive", json=restated).json()
        critique = next((e for e in second.get("events", []) if e["kind"] == "CRITIQUED"
                         and node and e["conceptId"] == node["conceptId"]), None)  # fmt: skip
        console.print(f"claw-1 heard it again; the critic: {critique['text'].splitlines()[-1] if critique else '-'}")

        def scored() -> dict[str, Any] | None:
            stm = http.get("/clam/v1/mind").json().get("stm", [])
            return next((n for n in stm if node and n["conceptId"] == node["conceptId"]
                         and n["confidenceScore"] >= 2), None)  # fmt: skip

        held = until(scored, 30) if node else None
    console.print(f"claw-1's mind holds the node, confidence score {held['confidenceScore'] if held else '?'} "
                  f"(promoted to long-term memory at 3)")  # fmt: skip
    ok = held is not None and critique is not None and "withstands" in critique["text"]
    if ok:
        console.print("[green]Outcome: perceived, critiqued, strengthened; all on the log, rebuilt by a "
                      "replay.[/green]")  # fmt: skip
    else:
        console.print(f"[red]Outcome: unexpected CLAM results[/red] first={first} second={second}")
    return ok


def print_dashboard(api_url: str, console: Console) -> None:
    console.rule("[bold]Dashboard[/bold]: everything above, live")
    console.print(f"Dashboard: {api_url}/dashboard (log in with a token: `.venv/bin/hivemem token --tenant {TENANT}`)")
