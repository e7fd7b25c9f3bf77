"""The knowledge pool end to end: claws -> Kafka -> gate -> governance -> Postgres -> HTTP."""

from __future__ import annotations

import random
import signal
import threading
import time
from typing import Any

import pytest

from governance.signing import Ed25519Signer
from hivemem.demo import CAPABILITIES, claw_client
from hivemem.stack import Stack
from tests.conftest import PRESENCE_WINDOW_S, wait_until
from tests.integration.governance_support import (
    beat_all,
    decided,
    decisions_in_log,
    fleet,
    proposal,
    propose,
    unique,
    vote,
)
from tests.integration.support import http, owner_db

pytestmark = pytest.mark.integration
STATEMENT = "Error E142 with DB timeout pattern maps to mitigation M7"


def test_seed_incident_scenario(stack: Stack) -> None:
    tenant, trace = "pool-seed", unique("incident")
    claws = fleet(stack, tenant, list(CAPABILITIES))
    for name, c in claws.items():
        c.publish("capabilities", {"capabilities": CAPABILITIES[name]}, trace_id=trace)
    beat_all(claws)
    with http(stack, tenant) as h:
        # claw-2 moves to an Ed25519 key; its vote below is signed with it.
        key = Ed25519Signer.generate("claw-2-a")
        tok = claws["claw-2"].register_key(key)
        keys = h.get("/api/v1/claws/claw-2/keys", params={"consistency": str(tok)}).json()
        assert [(k["keyId"], k["publicKeyHex"]) for k in keys] == [(key.key_id, key.public_key.hex())]
        claws["claw-2"].use_key(key)
        # The coordinator routes sub-tasks by announced capability.
        route = {cap: wait_until(lambda cap=cap: [c["clawId"] for c in h.get("/api/v1/claws",  # type: ignore[misc]
                                 params={"capability": cap}).json()], what=cap)
                 for cap in ("logs.read", "db.read", "incident.runbook")}  # fmt: skip
        assert route == {"logs.read": ["claw-1"], "db.read": ["claw-2"], "incident.runbook": ["claw-3"]}

        fact_key, p1 = "incident/E142", unique("p1")
        propose(claws["claw-4"], p1, fact_key, STATEMENT, trace=trace)
        for name in ("claw-1", "claw-2", "claw-3"):
            vote(claws[name], p1, trace=trace)
        view = decided(h, p1)
        assert view["status"] == "APPROVED"
        d = view["decision"]
        assert (d["quorumBasis"], d["threshold"], d["yesVotes"], d["noVotes"]) == (4, 3, 3, 0)
        assert sorted(d["voters"]) == ["claw-1", "claw-2", "claw-3"]
        assert [v["status"] for v in view["votes"]] == ["COUNTED"] * 3
        assert (view["fact"]["version"], view["fact"]["statement"]) == (1, STATEMENT)
        late = vote(claws["claw-4"], p1, trace=trace)

        p2 = unique("p2")
        propose(claws["claw-3"], p2, fact_key, STATEMENT + "; if M7 fails, M8", base=1, trace=trace)
        for name in ("claw-1", "claw-2", "claw-4"):
            vote(claws[name], p2, trace=trace)
        assert decided(h, p2)["fact"]["version"] == 2

        stale, gap = unique("stale"), unique("gap")
        propose(claws["claw-1"], stale, fact_key, "another v2", base=1, trace=trace)
        propose(claws["claw-1"], gap, fact_key, "a v4", base=3, trace=trace)
        for pid, code in ((stale, "FACT_STALE"), (gap, "FACT_CONFLICT")):
            v = wait_until(lambda pid=pid: (r := h.get(f"/api/v1/proposals/{pid}")).status_code == 200  # type: ignore[misc]
                           and r.json()["status"] == "REFUSED" and r.json(), what=pid)  # fmt: skip
            assert (v["refusal"], v["decision"], v["fact"]) == (code, None, None)

        fact = h.get(f"/api/v1/facts/{fact_key}").json()
        v2, v1 = fact["history"]
        assert fact["current"] == v2 and (v2["version"], v1["version"]) == (2, 1)
        assert (v2["supersedesVersion"], v1["validTo"], v2["validTo"]) == (1, v2["validFrom"], None)
        as_of = {t: h.get(f"/api/v1/facts/{fact_key}", params={"as_of": t}) for t in
                 (v1["validFrom"], v2["validFrom"] - 1, v2["validFrom"], v1["validFrom"] - 1)}  # fmt: skip
        assert [r.json().get("version") for r in as_of.values()] == [1, 1, 2, None]
        assert as_of[v1["validFrom"] - 1].json()["code"] == "FACT_NOT_VALID_AT"
        assert h.get(f"/api/v1/facts/{fact_key}", params={"as_of": "yesterday"}).json()["code"] == "INVALID_AS_OF"
        assert h.get("/api/v1/facts/no-such-fact").status_code == 404

        # The audit trail of the trace: proposal, every vote with its verdict, decisions, facts.
        trail = wait_until(lambda: (rows := h.get("/api/v1/audit", params={"traceId": trace}).json())
                           and sum(r["type"] == "fact" for r in rows) == 2 and any(
                               r["reasonCode"] == "PROPOSAL_CLOSED" for r in rows) and rows, what="audit")  # fmt: skip
        seen = {(r["type"], r["reasonCode"] or r["outcome"], r["stage"]) for r in trail}
        assert {("proposal", "ACCEPTED", "gate"), ("vote", "ACCEPTED", "gate"), ("decision", "ACCEPTED", "governance"),
                ("fact", "ACCEPTED", "governance"), ("vote", "PROPOSAL_CLOSED", "governance"),
                ("proposal", "FACT_STALE", "governance"), ("proposal", "FACT_CONFLICT", "governance"),
                ("capabilities", "ACCEPTED", "gate")} <= seen  # fmt: skip
        closed = [r for r in trail if r["reasonCode"] == "PROPOSAL_CLOSED"]
        assert [(r["clawId"], r["source"].rsplit(":", 2)[0]) for r in closed] == [("claw-4", "hivemem.accepted.vote")]
        gate_row = next(r for r in trail if r["source"] == str(late))
        assert (gate_row["outcome"], gate_row["eventId"]) == ("ACCEPTED", closed[0]["eventId"])


def test_governance_disabled_tenant_refuses_governed_types(stack: Stack) -> None:
    c = fleet(stack, "nogov", ["claw-x"])["claw-x"]
    pid = unique("nogov")
    tok = propose(c, pid, "k", STATEMENT)
    with http(stack, "nogov") as h:
        rows = h.get("/api/v1/audit", params={"traceId": pid, "consistency": str(tok)}).json()
        assert [(r["type"], r["reasonCode"]) for r in rows] == [("proposal", "GOVERNANCE_DISABLED")]
        assert h.get(f"/api/v1/proposals/{pid}").json()["code"] == "PROPOSAL_NOT_FOUND"


def test_vote_stuffing_counts_once(stack: Stack) -> None:
    tenant, pid = "pool-stuff", unique("stuff")
    claws = fleet(stack, tenant, ["a", "b", "c", "d", "e"])
    beat_all(claws)
    propose(claws["a"], pid, "stuffed", STATEMENT)
    instances = [claws["b"], claw_client(stack.settings, tenant, "b"), claw_client(stack.settings, tenant, "b")]
    assert len({i.instance_id for i in instances}) == 3  # one claw, three running instances
    for _ in range(3):
        vote(instances[0], pid, idempotency_key=f"{pid}-same")  # 1 counted, 2 refused by the gate
    for i in range(7):
        vote(instances[1 + i % 2], pid)  # new keys, other instances: refused by governance
    with http(stack, tenant) as h:

        def judged() -> dict[str, Any] | None:
            v = proposal(h, pid)
            return v if sum(x["status"] == "REFUSED" for x in v["votes"]) == 9 else None

        view = wait_until(judged, what="10 votes, 9 refused")
        codes = sorted((v["status"], v["reasonCode"]) for v in view["votes"])
        assert codes == [("RECEIVED", None)] + [("REFUSED", "DUPLICATE")] * 2 + [("REFUSED", "DUPLICATE_VOTE")] * 7
        assert (view["tally"]["yes"], view["tally"]["quorumBasis"], view["decision"]) == (1, 5, None)
        vote(claws["c"], pid)
        vote(claws["d"], pid)
        d = decided(h, pid)["decision"]
        assert (d["yesVotes"], d["threshold"], sorted(d["voters"])) == (3, 3, ["b", "c", "d"])


def test_quorum_basis_follows_active_claws(stack: Stack) -> None:
    tenant = "pool-basis"
    claws = fleet(stack, tenant, ["a", "b", "c"])
    beat_all(claws)
    slow, fast = unique("slow"), unique("fast")
    propose(claws["a"], slow, "basis", STATEMENT, deadline_s=120)
    with http(stack, tenant) as h:
        assert wait_until(lambda: proposal(h, slow)["tally"]["quorumBasis"] == 3, what="basis 3")
        # c falls silent: a and b keep beating past the presence window.
        end = time.monotonic() + PRESENCE_WINDOW_S + 1.5
        while time.monotonic() < end:
            beat_all({k: claws[k] for k in ("a", "b")})
            time.sleep(1.0)
        propose(claws["a"], fast, "basis-fast", STATEMENT, deadline_s=3)
        for pid in (slow, fast):
            vote(claws["a"], pid)
            vote(claws["b"], pid)
        expired = decided(h, fast)  # two active claws: no decision by quorum, it expires
        d = expired["decision"]
        assert (expired["status"], d["quorumBasis"], d["yesVotes"], d["decidedAt"]) == (
            "EXPIRED", 2, 2, expired["deadline"])  # fmt: skip
        view = proposal(h, slow)
        assert view["decision"] is None and view["tally"]["quorumBasis"] in (2, 3)
        beat_all(claws)  # c is back
        vote(claws["c"], slow)
        d = decided(h, slow)["decision"]
        assert (d["outcome"], d["quorumBasis"], d["yesVotes"]) == ("APPROVED", 3, 3)


def _vote_storm(
    stack: Stack, tenant: str, n_claws: int, n_props: int, during: object = None, pace: float = 0.0
) -> dict[str, int]:
    """Every claw votes on every proposal, from 4 threads (each pausing ``pace`` s per vote);
    returns votes sent per proposal."""
    claws = fleet(stack, tenant, [f"claw-{i:02d}" for i in range(n_claws)], shared=True)
    beat_all(claws)
    pids = [unique(f"storm{i}") for i in range(n_props)]
    first = next(iter(claws.values()))
    for pid in pids:
        propose(first, pid, pid, STATEMENT, deadline_s=180)
    rng = random.Random(7)
    plan = [(c, pid, rng.random() < (0.85 if i % 2 else 0.15)) for c in claws.values() for i, pid in enumerate(pids)]
    rng.shuffle(plan)
    for pid in pids:  # every proposal must reach a majority one way or the other
        yes = sum(1 for _, p, y in plan if p == pid and y)
        assert max(yes, n_claws - yes) >= n_claws // 2 + 1
    sent = dict.fromkeys(pids, 0)
    lock = threading.Lock()

    def send(part: list[tuple[object, str, bool]]) -> None:
        for j, (c, pid, yes) in enumerate(part):
            env = c.build("vote", {"proposalId": pid, "vote": "YES" if yes else "NO"}, trace_id=pid)  # type: ignore[attr-defined]
            c.publish_envelope_async(env, lambda t, e: None)  # type: ignore[attr-defined]
            with lock:
                sent[pid] += 1
            if pace:
                time.sleep(pace)
            elif j % 50 == 0:
                time.sleep(0.01)

    threads = [threading.Thread(target=send, args=(plan[k::4],)) for k in range(4)]
    for t in threads:
        t.start()
    if during is not None:
        during()  # type: ignore[operator]
    for t in threads:
        t.join()
    assert first.flush(60) == 0
    return sent


def _exactly_one_decision_each(stack: Stack, tenant: str, sent: dict[str, int], n_claws: int) -> None:
    with http(stack, tenant) as h:
        views = {pid: decided(h, pid, timeout=120) for pid in sent}
    log = decisions_in_log(stack, tenant)
    assert {pid: len(log.get(pid, [])) for pid in sent} == dict.fromkeys(sent, 1)  # one record each, no copies
    majority = n_claws // 2 + 1
    for pid, view in views.items():
        d = view["decision"]
        assert d["eventId"] == log[pid][0][0]
        assert (d["quorumBasis"], d["threshold"]) == (n_claws, majority)
        assert max(d["yesVotes"], d["noVotes"]) == majority  # the first majority decides
        assert len(set(d["voters"])) == d["yesVotes"] + d["noVotes"]
    # Nothing lost: every vote was either counted or refused as arriving after the decision.
    with owner_db(stack) as conn:

        def closed() -> dict[str, tuple[int, int]] | None:
            rows = conn.execute(
                "SELECT v.proposal_id, count(*), count(r.reason_code) FILTER (WHERE r.reason_code = 'PROPOSAL_CLOSED') "
                "FROM governance.votes v LEFT JOIN governance.refusals r ON r.envelope_event_id = v.event_id "
                "AND r.stage = 'governance' WHERE v.tenant = %s GROUP BY 1", (tenant,)).fetchall()  # fmt: skip
            got = {str(r[0]): (int(str(r[1])), int(str(r[2]))) for r in rows}
            want = {pid: (n, n - len(views[pid]["decision"]["voters"])) for pid, n in sent.items()}
            return want if got == want else None

        wait_until(closed, 60, what="every vote counted or refused")


def test_fifty_claws_vote_concurrently_on_twenty_proposals(stack: Stack) -> None:
    sent = _vote_storm(stack, "pool-fifty", 50, 20)
    assert sum(sent.values()) == 1000
    _exactly_one_decision_each(stack, "pool-fifty", sent, 50)


def test_governance_processor_sigkilled_mid_stream(stack: Stack) -> None:
    from tests.integration.test_faults import _assert_equal_to_clean_replay

    gov = stack.services["governance"]
    before = _votes_folded(stack)
    at_kill: list[int] = []

    def kill_and_restart() -> None:
        wait_until(lambda: _votes_folded(stack) >= before + 100, 60, 0.01, what="governance mid-stream")
        assert gov.proc is not None
        gov.proc.send_signal(signal.SIGKILL)
        gov.proc.wait()
        at_kill.append(_votes_folded(stack) - before)
        time.sleep(0.5)
        gov.start()

    sent = _vote_storm(stack, "pool-kill", 30, 15, during=kill_and_restart, pace=0.02)
    assert gov.alive() and 100 <= at_kill[0] < sum(sent.values())  # killed mid-stream
    _exactly_one_decision_each(stack, "pool-kill", sent, 30)
    _assert_equal_to_clean_replay(stack)


def _votes_folded(stack: Stack) -> int:
    with owner_db(stack) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(next_offset), 0) FROM hivemem.projection_offsets "
            "WHERE consumer = 'governance-processor' AND topic LIKE '%accepted.vote'"
        ).fetchone()
    return int(str(row[0])) if row else 0


def test_outputs_a_killed_processor_had_already_sent_are_not_sent_again(stack: Stack) -> None:
    """The window between producing outbox rows and marking them sent: after a restart the
    processor finds the rows already in Kafka (from its publish marks) and sends only the rest."""
    from confluent_kafka import Producer

    from contracts.models import DecisionPayload
    from governance.votes.voting import DecisionOut
    from processors.votes.core import NAME, GovernanceCore
    from producers.claw_client import producer_config
    from streams.kafka import high_watermarks
    from streams.outbox import out_id, set_marks
    from streams.records import OUT_HEADER

    tenant, names = "pool-bench", stack.settings.topics
    core = GovernanceCore(names, stack.settings.load_config().system_signer())
    rows = [core.encode(DecisionOut(tenant, pid, DecisionPayload(
        proposal_id=pid, outcome="EXPIRED", yes_votes=0, no_votes=0, quorum_basis=0, threshold=2, voters=[],
        decided_at=1))) for pid in (unique("landed"), unique("lost"))]  # fmt: skip
    gov = stack.services["governance"]
    gov.stop()
    with owner_db(stack) as conn:
        set_marks(conn, NAME, high_watermarks(stack.settings.require_kafka(), [names.inbound("decision")]))
        seqs = [int(str(conn.execute(
            "INSERT INTO hivemem.outbox (processor, topic, partition, key, value) VALUES (%s, %s, %s, %s, %s) "
            "RETURNING seq", (NAME, r.topic, r.partition, r.key, r.value)).fetchone()[0])) for r in rows]  # type: ignore[index]  # fmt: skip
    p = Producer(producer_config(stack.settings.require_kafka()))
    p.produce(rows[0].topic, rows[0].value, rows[0].key, partition=rows[0].partition,
              headers=[(OUT_HEADER, out_id(NAME, seqs[0]))])  # it got out before the crash  # fmt: skip
    assert p.flush(30) == 0
    gov.start()
    with owner_db(stack) as conn:
        wait_until(lambda: conn.execute("SELECT count(*) = 0 FROM hivemem.outbox WHERE processor = %s AND "
                                        "seq = ANY(%s)", (NAME, seqs)).fetchone()[0], what="outbox drained")  # type: ignore[index]  # fmt: skip
    log = decisions_in_log(stack, tenant)
    assert sorted(len(v) for v in log.values()) == [1, 1]  # each exactly once


def test_a_fact_written_around_the_processor_is_not_shared_truth(stack: Stack) -> None:
    from contracts.avro import encode_envelope
    from contracts.topics import partition_key
    from governance.signing import SYSTEM_CLAW

    tenant, fact_key, trace = "pool-bench", unique("forged"), unique("forged")
    rogue = fleet(stack, tenant, ["rogue"])["rogue"]
    body = {"factKey": fact_key, "version": 1, "statement": "trust me", "validFrom": 1}
    forged = rogue.build("fact", body, trace_id=trace).model_copy(update={"claw_id": SYSTEM_CLAW})
    rogue.produce_raw(stack.settings.topics.inbound("fact"), partition_key(tenant, forged.aggregate),
                      encode_envelope(forged))  # fmt: skip
    assert rogue.flush(30) == 0
    with http(stack, tenant) as h:
        rows = wait_until(lambda: h.get("/api/v1/audit", params={"traceId": trace}).json(), what="audit of the forgery")
        assert [(r["type"], r["outcome"], r["reasonCode"]) for r in rows] == [("fact", "REJECTED", "UNVERIFIED_OUTPUT")]
        with owner_db(stack) as conn:
            wait_until(lambda: conn.execute("SELECT count(*) FROM hivemem.processing_failures WHERE processor = "
                                            "'governance' AND error LIKE %s", (f"%{forged.event_id}%",)).fetchone()[0],  # type: ignore[index]
                       what="the governance read model refusing it")  # fmt: skip
        assert h.get(f"/api/v1/facts/{fact_key}").json()["code"] == "FACT_NOT_FOUND"


def test_key_rotation_and_revocation_through_the_real_gate(stack: Stack) -> None:
    tenant, trace = "pool-bench", unique("keys")
    claw = fleet(stack, tenant, ["keyed"])["keyed"]
    k1, k2 = Ed25519Signer.generate(unique("k1")), Ed25519Signer.generate(unique("k2"))
    with http(stack, tenant) as h:

        def keys(tok: object) -> list[tuple[str, str | None, bool]]:
            rows = h.get("/api/v1/claws/keyed/keys", params={"consistency": str(tok)}).json()
            return [(r["keyId"], r["replaces"], r["revokedAt"] is not None) for r in rows]

        assert keys(claw.register_key(k1, trace_id=trace)) == [(k1.key_id, None, False)]
        claw.use_key(k1)
        assert keys(claw.register_key(k2, trace_id=trace)) == [(k1.key_id, None, False), (k2.key_id, k1.key_id, False)]
        stale = claw.publish("capabilities", {"capabilities": ["x"]}, trace_id=trace)  # k1, after the rotation
        claw.use_key(k2)
        fine = claw.publish("capabilities", {"capabilities": ["y"]}, trace_id=trace)
        assert keys(claw.revoke_key(k2.key_id, trace_id=trace))[-1] == (k2.key_id, k1.key_id, True)
        claw.use_key(k2)
        last = claw.publish("capabilities", {"capabilities": ["z"]}, trace_id=trace)
        rows = h.get("/api/v1/audit", params={"traceId": trace, "consistency": str(last)}).json()
        verdict = {r["source"]: r["reasonCode"] or r["outcome"] for r in rows}
        pos = {n: str(t) for n, t in (("stale", stale), ("fine", fine), ("last", last))}
        assert [verdict[pos[n]] for n in ("stale", "fine", "last")] == ["KEY_ROTATED", "ACCEPTED", "KEY_REVOKED"]
