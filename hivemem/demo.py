"""The demo scenario: four claws of seed 004 announce themselves, write, and get audited; then each
kind of memory in turn (CAML, KMMS, and KMP, KSTAR, CLAM in ``demo_kmp_kstar_clam``)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
from confluent_kafka import Producer
from rich.console import Console
from rich.table import Table

from contracts.avro import encode_envelope
from contracts.topics import partition_key
from governance.identity import HMAC_PREFIX, derive_deployment_key
from hivemem.demo_kmp_kstar_clam import print_dashboard, run_clam, run_kmp, run_kstar
from hivemem.settings import Settings
from producers.claw_client import ClawClient
from projections.auth import mint_token

TENANT = "acme"
CAPABILITIES = {
    "claw-1": ["logs.read:/var/log/app/*"],
    "claw-2": ["db.read:orders,customers"],
    "claw-3": ["incident.runbook:v2"],
    "claw-4": ["coordinator"],
}


def claw_client(settings: Settings, tenant: str, claw_id: str, producer: Producer | None = None) -> ClawClient:
    """A claw signing with its deployment key (derived from the tenant's first operator secret)."""
    policy = settings.load_config().tenants[tenant]
    secret_id, secret = next(iter(policy.operator_secrets.items()))
    return ClawClient(settings.require_kafka(), tenant, claw_id, derive_deployment_key(secret, tenant, claw_id),
                      HMAC_PREFIX + secret_id, topics=settings.topics, producer=producer)  # fmt: skip


def run_demo(settings: Settings, api_url: str, console: Console | None = None) -> bool:
    console = console or Console()
    config = settings.load_config()
    trace = f"incident-{uuid.uuid4().hex[:6]}"
    console.rule("[bold]HiveMem demo[/bold]: four claws share a Kafka knowledge pool")
    clients = {c: claw_client(settings, TENANT, c) for c in CAPABILITIES}
    for claw_id, caps in CAPABILITIES.items():
        clients[claw_id].heartbeat()
        last = clients[claw_id].publish("capabilities", {"capabilities": caps}, trace_id=trace)
    console.print(f"4 claws sent presence heartbeats and capabilities (trace {trace})")

    writer = clients["claw-3"]
    key = f"episode-{uuid.uuid4().hex[:8]}"
    # Each accepted episode says something new: the memory keeps one copy of the same content.
    episode = {"episodeId": key, "about": "checkout", "content": f"checkout failed: E142 with DB timeouts ({trace})",
               "dimensions": {"service": "checkout"}, "occurredAt": 0}  # fmt: skip
    for _ in range(3):
        writer.publish("episode", episode, idempotency_key=key, trace_id=trace)
    console.print("claw-3 published one episode three times with the same idempotencyKey")
    original = writer.build("episode", {**episode, "episodeId": key + "-b",
                                        "content": f"checkout retried: E142 again after failover ({trace})"},
                            trace_id=trace)  # fmt: skip
    for _ in range(2):
        writer.publish_envelope(original)
    console.print("claw-3 sent one signed request twice (a replay)")
    forged = clients["claw-2"].build("episode", {**episode, "episodeId": key + "-f"}, trace_id=trace)
    forged = forged.model_copy(update={"claw_id": "claw-1"})  # claims to be claw-1, signed by claw-2
    writer.produce_raw(settings.topics.inbound("episode"), partition_key(TENANT, forged.aggregate),
                       encode_envelope(forged))  # fmt: skip
    recovered = {**episode, "episodeId": key + "-z", "content": f"checkout recovered: pool resized ({trace})"}
    final = writer.publish("episode", recovered, trace_id=trace)
    console.print("claw-2 forged an envelope in claw-1's name")
    for c in clients.values():
        c.flush()

    token = mint_token(config.token_secret, TENANT, "demo")
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=api_url, headers=headers, timeout=30) as http:
        claws = http.get("/api/v1/claws", params={"capability": "logs.read", "consistency": str(last)}).json()
        audit = http.get("/api/v1/audit", params={"traceId": trace, "consistency": str(final)}).json()

    console.print(f"Coordinator asks who can read logs: {[c['clawId'] for c in claws]}")
    table = Table(title=f"Audit trail for {trace}")
    for col in ("type", "claw", "outcome", "reason"):
        table.add_column(col)
    for row in audit:
        table.add_row(row["type"] or "?", row["clawId"] or "?", row["outcome"], row["reasonCode"] or "")
    console.print(table)
    outcomes = sorted((r["outcome"], r["reasonCode"] or "") for r in audit if r["type"] == "episode")
    expected = sorted([("ACCEPTED", "")] * 3 + [("REJECTED", "DUPLICATE")] * 2
                      + [("REJECTED", "REPLAYED"), ("REJECTED", "BAD_SIGNATURE")])  # fmt: skip
    ok = [c["clawId"] for c in claws] == ["claw-1"] and outcomes == expected
    if ok:
        console.print("[green]Outcome: 3 episodes accepted; duplicate, replay and forgery rejected "
                      "with their reason codes; every verdict audited.[/green]")  # fmt: skip
    else:
        console.print(f"[red]Outcome: unexpected results[/red] claws={claws} episodes={outcomes}")
    voted = run_vote(clients, api_url, headers, console)
    console.rule("[bold]Collective memory (CAML)[/bold]: operators share what their claws learnt")
    shared = run_caml(settings, api_url, console)
    console.rule("[bold]Per-claw memory (KMMS)[/bold]: episodes in, facts up, confident answers down")
    remembered = run_memory(settings, api_url, console)
    console.rule("[bold]Process memory (KMP)[/bold]: what happened, why, and the path between")
    traced = run_kmp(settings, api_url, console)
    console.rule("[bold]Portable memory (KSTAR)[/bold]: export, verify, import")
    moved = run_kstar(settings, api_url, console)
    console.rule("[bold]Learning loop (CLAM)[/bold]: perceive, critique, strengthen")
    learnt = run_clam(settings, api_url, console)
    print_dashboard(api_url, console)
    return remembered and traced and moved and learnt and shared and voted and ok


STATEMENT = "Error E142 with DB timeout pattern maps to mitigation M7"


def run_vote(clients: dict[str, ClawClient], api_url: str, headers: dict[str, str], console: Console) -> bool:
    """Seed 004's flow: a proposal, votes (one claw tries twice), a quorum decision, fact v1."""
    pid = f"e142-{uuid.uuid4().hex[:6]}"
    fact_key = f"incident/E142-{pid[-6:]}"
    proposer = clients["claw-3"]
    proposer.publish("proposal", {"proposalId": pid, "factKey": fact_key, "statement": STATEMENT,
                                  "tags": ["incident", "checkout"], "proposer": "claw-3",
                                  "deadline": int(time.time() * 1000) + 120_000}, trace_id=pid)  # fmt: skip
    for claw_id in ("claw-2", "claw-2", "claw-1", "claw-4"):
        clients[claw_id].publish("vote", {"proposalId": pid, "vote": "YES", "reason": "matches the runbook"},
                                 trace_id=pid)  # fmt: skip
    console.print(f"claw-3 proposed [italic]{STATEMENT!r}[/italic]; claw-2 voted twice, claw-1 and claw-4 once")
    view: dict[str, object] = {}
    fact: dict[str, Any] = {}
    with httpx.Client(base_url=api_url, headers=headers, timeout=30) as http:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            r = http.get(f"/api/v1/proposals/{pid}")
            if r.status_code == 200 and r.json()["decision"] and any(
                    v["status"] == "REFUSED" for v in r.json()["votes"]):  # fmt: skip
                # The decision and the fact it publishes reach their read models separately.
                f = http.get(f"/api/v1/facts/{fact_key}")
                if f.status_code == 200 and f.json().get("current"):
                    view, fact = r.json(), f.json()
                    break
            time.sleep(0.2)
    if not view:
        console.print("[red]Outcome: no decision within 60 s[/red]")
        return False
    table = Table(title=f"Proposal {pid}: votes")
    for col in ("claw", "vote", "status", "reason"):
        table.add_column(col)
    for v in view["votes"]:  # type: ignore[attr-defined]
        table.add_row(v["clawId"], v["vote"] or "", v["status"], v["reasonCode"] or "")
    console.print(table)
    d = view["decision"]
    assert isinstance(d, dict)
    current = fact.get("current", {})
    console.print(f"Decision: {d['outcome']} with {d['yesVotes']} of {d['quorumBasis']} active claws "
                  f"(majority {d['threshold']}); fact {fact_key} v{current.get('version')}")  # fmt: skip
    ok = d["outcome"] == "APPROVED" and current.get("version") == 1 and d["yesVotes"] == 3
    if ok:
        console.print("[green]Outcome: one vote per claw counted, quorum decision, shared fact v1 "
                      "published.[/green]")  # fmt: skip
    return ok


def run_caml(settings: Settings, api_url: str, console: Console) -> bool:
    """Collective memory across two operators: acme observes, globex recalls and validates; a
    text with an email address is refused 422 PII_REJECTED without echoing it."""
    from producers.caml_client import CamlClient, CamlError, Hit, collective_memory

    secret = settings.load_config().token_secret
    tag = uuid.uuid4().hex[:4]
    author = CamlClient(api_url, mint_token(secret, "acme", "demo", "claw-3"), timeout_s=60)
    reader = CamlClient(api_url, mint_token(secret, "globex", "demo", "claw-9"), timeout_s=60)
    pattern = {"signal": "checkout error E142", "baseline": "0.1 %", "observed": "4 %", "window": "1 h"}
    result = author.observe(
        "ANOMALY_DETECTED",
        "technology",
        f"Checkout error E142 ({tag}) follows database connection pool exhaustion",
        pattern=pattern,
        evidence=[f"trace-{tag}-1", f"trace-{tag}-2", f"trace-{tag}-3"],
        wait_ms=30_000,  # the first write after a start waits while the models load
    )
    console.print(f"acme/claw-3 observed an anomaly: {result.status if result else '?'}")
    try:
        author.observe(
            "ANOMALY_DETECTED",
            "technology",
            "Ask jane.doe@globexmail.com about E142",
            pattern=pattern,
            evidence=["t-a", "t-b", "t-c"],
            wait_ms=30_000,
        )
        refused = ""
    except CamlError as e:
        refused = f"{e.status} {e.code}"
    console.print(f"acme/claw-3 tried to share a text with an email address: {refused} (no detail echoed)")
    deadline, hits = time.monotonic() + 30, list[Hit]()
    while time.monotonic() < deadline and not any(h.own is False for h in hits):
        hits = reader.recall("why does checkout fail with E142?", k=3, timeout_s=10)
        time.sleep(0.2)
    console.print("globex/claw-9 recalled, before acting:")
    console.print(collective_memory(hits, min_score=0.0) or "(nothing)")
    if result and hits:
        reader.validate(result.observation_id, "CONFIRMED")
        console.print("globex/claw-9 confirmed it worked: acme/claw-3's reputation +3")
    ok = bool(result and result.status == "ACCEPTED" and refused == "422 PII_REJECTED"
              and any(h.observation_id == result.observation_id for h in hits))  # fmt: skip
    if ok:
        console.print("[green]Outcome: shared across operators, personal data refused, validated.[/green]")
    return ok


def run_memory(settings: Settings, api_url: str, console: Console) -> bool:
    """A user's move from Lisbon to Porto, told over four sessions: the consolidated fact answers
    "now" with Porto and "in March" with Lisbon, each with its layer, confidence and evidence."""
    from producers.memory_client import MemoryClient

    secret = settings.load_config().token_secret
    user = f"ana-{uuid.uuid4().hex[:4]}"  # a fresh memory each run (the same words would be duplicates)
    mem = MemoryClient(api_url, mint_token(secret, "acme", "demo", "claw-3"), user_id=user, timeout_s=60)
    told = [("2026-01-10", "I live in Lisbon, in a small flat near the river."),
            ("2026-02-07", "My flat in Lisbon has a tiny balcony where I grow basil."),
            ("2026-04-20", "I moved to Porto last week and the new apartment is bigger."),
            ("2026-05-02", "I cooked a mushroom risotto for my new neighbours.")]  # fmt: skip
    ids = []
    for i, (day, text) in enumerate(told):
        r = mem.add([{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}],
                    session_id=f"{user}-s{i}", occurred_at=f"{day}T09:00:00Z", wait_ms=30_000)  # fmt: skip
        ids.append(r.episode_id)
        console.print(f"{day} {user} told acme/claw-3: {text!r} -> {r.status}")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # consolidation runs behind the write: wait for the move to supersede
        current = [f.fact_value or "" for f in mem.facts("residence")]
        if current and all("Porto" in v for v in current):
            break
        time.sleep(0.3)
    mem.wait_indexed(ids, timeout_s=60)  # then for every unit and derived node to have its vector
    now = mem.ask("Where do I live now?")
    then = mem.search("Where did I live in March?", as_of="2026-04-30T00:00:00Z")
    fact_then = next((h for h in then.context if h.layer == 2 and h.fact_key == "residence"), None)
    console.print(f"Where do I live now? -> {now.answer!r} (L{now.result.answer_layer}, confidence "
                  f"{now.result.confidence:.2f}, evidence {now.result.provenance[-1:]})")  # fmt: skip
    if fact_then is not None:
        console.print(f"Where did I live in March? (as of 2026-04-30) -> {fact_then.fact_value!r} "
                      f"(valid {fact_then.valid_from:%Y-%m-%d} .. {fact_then.valid_until or 'now'})")  # fmt: skip
    ok = bool(now.answer and "Porto" in now.answer and fact_then and "Lisbon" in (fact_then.fact_value or ""))
    if ok:
        console.print("[green]Outcome: the move superseded the old fact; now and then both answered.[/green]")
    else:
        console.print("[red]Outcome: unexpected memory answers[/red]")
    return ok
