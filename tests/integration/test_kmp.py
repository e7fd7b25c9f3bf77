"""KMP end to end: the incident story written by two agents over HTTP (envelope -> gate -> kmp
processor -> kmp read model), then wake / ask / goto / near / rewind / forward / trace / inspect
answer with evidence refs that resolve; UNKNOWN without evidence; scopes never mix abouts;
kernel_write_memory's fallback; known-at hides what was written later; a replay rebuilds it."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
import pytest

from hivemem.services import projections
from hivemem.stack import Stack
from projections.replay import rebuild
from tests.integration.support import http
from tests.kmp_story import MIN, story

pytestmark = pytest.mark.integration
T0 = 1_767_225_600_000


def _post(h: httpx.Client, path: str, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
    r = h.post(path, json=body)
    assert r.status_code == status, r.text
    out: dict[str, Any] = r.json()
    return out


def _tell(stack: Stack, about: str, tenant: str = "kmp-a") -> list[dict[str, Any]]:
    results = []
    for writer, payload in story(about, T0):
        with http(stack, tenant, writer) as h:
            results.append(_post(h, "/kmp/v1/ingest?wait_ms=20000", payload))
    return results


@pytest.fixture(scope="module")
def incident(stack: Stack) -> tuple[str, list[dict[str, Any]]]:
    about = f"inc-{uuid.uuid4().hex[:6]}"
    return about, _tell(stack, about)


def test_ingest_verdicts_and_quality(incident: tuple[str, list[dict[str, Any]]]) -> None:
    _, results = incident
    assert [r["status"] for r in results] == ["INGESTED"] * 4
    assert [r["quality"]["suspect"] for r in results] == [0, 0, 0, 1]
    assert results[0]["quality"]["structural"] == 2 and results[1]["quality"]["anemic"] == 1
    assert all(r["readAfterWriteReady"] and r["knownAt"] > 0 for r in results)
    known = [r["knownAt"] for r in results]
    assert known == sorted(known)


def test_wake_gives_the_state_to_continue(stack: Stack, incident: tuple[str, list[dict[str, Any]]]) -> None:
    about, _ = incident
    with http(stack, "kmp-a", "resumer") as h:
        w = _post(h, "/kmp/v1/wake", {"about": about})
    assert w["objective"]["ref"] == "obj"
    state = {e["ref"] for e in w["currentState"]}
    assert "res-fixed" in state and "res-restart" not in state  # superseded by the rollback
    spine = {(s["claimRef"], s["rel"], s["becauseRef"]) for s in w["causalSpine"]}
    assert ("dec-rollback", "chosen_because", "cause-v42") in spine
    assert all(s["evidenceRefs"] for s in w["causalSpine"])
    assert [e["ref"] for e in w["guardrails"]] == ["guard-schema"]
    assert [e["ref"] for e in w["nextActions"]] == ["next-pm"]
    assert [e["ref"] for e in w["openLoops"]] == ["hyp-pool"]  # the canary question is resolved by next-pm
    assert w["resumeCursor"]


def test_ask_answers_with_evidence_or_unknown(stack: Stack, incident: tuple[str, list[dict[str, Any]]]) -> None:
    about, _ = incident
    with http(stack, "kmp-a", "asker") as h:
        a = _post(h, "/kmp/v1/ask", {"about": about, "question": "why did we roll back the payments service?"})
        assert a["answerRef"] == "dec-rollback" and a["proof"]["confidence"] in ("HIGH", "MEDIUM")
        assert {v["ref"] for v in a["proof"]["evidence"]} >= {"ev-diff"}
        # Every evidence ref resolves through inspect.
        for v in a["proof"]["evidence"]:
            got = _post(h, "/kmp/v1/inspect", {"about": about, "ref": v["ref"]})
            assert got["kind"] == "evidence" and got["raw"] is None
        # Nothing with evidence about this: UNKNOWN, never a guess (only the canary question and the next
        # action mention it, neither with evidence).
        u = _post(h, "/kmp/v1/ask", {"about": about, "question": "canary"})
        assert (u["answer"], u["proof"]["confidence"]) == (None, "UNKNOWN")
        assert sorted(u["proof"]["missing"]) == ["next-pm", "q-canary"]
        best = _post(h, "/kmp/v1/ask", {"about": about, "question": "canary", "answerPolicy": "BEST_EFFORT"})
        assert best["answerRef"] in ("next-pm", "q-canary") and best["proof"]["confidence"] == "LOW"
        # Scopes: ABOUTS needs its list; an unrelated about is never mixed in.
        r = h.post("/kmp/v1/ask", json={"question": "rollback", "scope": {"mode": "ABOUTS"}})
        assert (r.status_code, r.json()["code"]) == (422, "ABOUTS_REQUIRED")
        g = _post(h, "/kmp/v1/ask", {"question": "rollback", "scope": {"mode": "ALL_ABOUTS"}})
        assert g["scope"]["isGlobal"] and any(w.startswith("GLOBAL_SCOPE") for w in g["warnings"])
        # Observable: each call by operation, scope and outcome; each answer's confidence.
        metrics = h.get("/metrics").text
        assert 'hivemem_kmp_calls_total{op="ask",outcome="ok",scope="ALL_ABOUTS"}' in metrics
        assert 'hivemem_kmp_calls_total{op="ask",outcome="ABOUTS_REQUIRED",scope="ABOUTS"}' in metrics
        assert 'hivemem_kmp_answers_total{confidence="UNKNOWN"}' in metrics


def test_time_navigation_and_trace(stack: Stack, incident: tuple[str, list[dict[str, Any]]]) -> None:
    about, _ = incident
    with http(stack, "kmp-a", "navigator") as h:
        g = _post(h, "/kmp/v1/goto", {"about": about, "cursor": {"ref": "dec-rollback"}})
        assert [e["ref"] for e in g["entries"]] == ["dec-rollback"] and g["resolved"]["ref"] == "dec-rollback"
        n = _post(h, "/kmp/v1/near", {"about": about, "cursor": {"time": T0 + 14 * MIN},
                                      "window": {"before": 1, "after": 1}})  # fmt: skip
        assert [e["ref"] for e in n["entries"]] == ["q-canary", "dec-rollback", "res-fixed"]
        back = _post(h, "/kmp/v1/rewind", {"about": about, "cursor": {"ref": "act-restart"}, "limit": 2})
        assert [e["ref"] for e in back["entries"]] == ["hyp-pool", "guard-schema"]  # same minute: log order
        # Paging forward from the start visits each entry once, in time order.
        seen, token = [], None
        while True:
            page = _post(h, "/kmp/v1/forward", {"about": about, "limit": 4,
                                                "cursor": {"token": token} if token else {}})  # fmt: skip
            seen += [e["ref"] for e in page["entries"]]
            token = page["page"]["nextCursor"]
            if not page["page"]["hasMore"]:
                break
        assert len(seen) == len(set(seen)) == 11 and seen[0] == "obj" and seen[-1] == "next-pm"
        bad = h.post("/kmp/v1/forward", json={"about": about, "cursor": {"token": "garbage!"}})
        assert (bad.status_code, bad.json()["code"]) == (422, "INVALID_CURSOR")
        t = _post(h, "/kmp/v1/trace", {"about": about, "from": "res-fixed", "to": "hyp-pool"})
        hops = [(x["sourceRef"], x["rel"], x["targetRef"]) for x in t["trace"]]
        assert t["found"] and hops[0][0] == "res-fixed" and hops[-1][2] == "hyp-pool"
        assert all(x["quality"] == "RICH" for x in t["trace"])
        i = _post(h, "/kmp/v1/inspect", {"about": about, "ref": "dec-rollback", "include": {"raw": True}})
        assert i["raw"] == "Roll back the payments service to v41." and {x["targetRef"] for x in
                                                                           i["links"]["outgoing"]} == {
            "cause-v42", "res-restart"}  # fmt: skip
        missing = h.post("/kmp/v1/inspect", json={"about": about, "ref": "nope"})
        assert (missing.status_code, missing.json()["code"]) == (404, "REF_NOT_FOUND")


def test_abouts_never_mix_and_tenants_never_see_each_other(stack: Stack) -> None:
    a, b = f"task-{uuid.uuid4().hex[:6]}", f"task-{uuid.uuid4().hex[:6]}"
    with http(stack, "kmp-a", "w") as h:
        for about, text in ((a, "alpha quokka result"), (b, "beta quokka result")):
            _post(h, "/kmp/v1/ingest?wait_ms=20000", {
                "about": about, "dimensions": [{"id": "session:1", "kind": "session"}],
                "entries": [{"id": "r", "kind": "result", "text": text, "occurredAt": T0,
                             "coordinates": [{"dimension": "session:1"}]}],
                "evidence": [{"id": "v", "text": "log line", "supports": ["r"]}]})  # fmt: skip
        one = _post(h, "/kmp/v1/ask", {"about": a, "question": "quokka"})
        assert [x["about"] for x in one["because"]] == [a]
        both = _post(h, "/kmp/v1/ask", {"question": "quokka", "scope": {"mode": "ABOUTS", "abouts": [a, b]}})
        assert sorted(x["about"] for x in both["because"]) == sorted([a, b])
        w = _post(h, "/kmp/v1/wake", {"about": a, "dimensions": ["session:1"]})
        assert [e["summary"] for e in w["currentState"]] == ["alpha quokka result"]
    with http(stack, "kmp-b", "w") as other:
        g = _post(other, "/kmp/v1/ask", {"question": "quokka", "scope": {"mode": "ALL_ABOUTS"}})
        assert g["because"] == [] and g["proof"]["confidence"] == "UNKNOWN"
        assert other.post("/kmp/v1/inspect", json={"about": a, "ref": "r"}).status_code == 404


def test_write_memory_checks_and_falls_back_honestly(stack: Stack, incident: tuple[str, list[dict[str, Any]]]) -> None:
    about, _ = incident
    with http(stack, "kmp-a", "writer") as h:
        w = _post(h, "/kmp/v1/write-memory?wait_ms=20000", {
            "about": about, "kind": "note", "text": "Pool size alerts added to the canary.",
            "dimensions": ["session:3"], "contextRefs": ["next-pm"],
            "evidence": [{"text": "PR 1234 merged", "source": "git"}],
            "connections": [
                {"target": "next-pm", "rel": "resolves", "semanticClass": "PROCEDURAL", "why": "does the check",
                 "evidence": ["#0"]},
                {"target": "obj", "rel": "depends_on", "semanticClass": "CAUSAL", "why": "guess"}]})  # fmt: skip
        assert w["result"]["status"] == "INGESTED" and len(w["fallbacks"]) == 1
        rels = {(r["rel"], r["targetRef"]) for r in w["compiled"]["relations"]}
        assert rels == {("resolves", "next-pm"), ("follows", "obj")}  # obj was not read: an honest 'follows'
        assert w["result"]["quality"]["rich"] == 1 and w["result"]["quality"]["anemic"] == 1
        strict = h.post("/kmp/v1/write-memory", json={"about": about, "kind": "note", "text": "x", "fallback": "REJECT",
                                                      "connections": [{"target": "obj", "rel": "depends_on",
                                                                       "semanticClass": "CAUSAL"}]})  # fmt: skip
        assert (strict.status_code, strict.json()["code"]) == (422, "SUSPECT_RELATION")
        ghost = h.post("/kmp/v1/write-memory", json={"about": about, "kind": "note", "text": "x", "connections": [
            {"target": "ghost", "rel": "follows", "semanticClass": "PROCEDURAL"}]})  # fmt: skip
        assert (ghost.status_code, ghost.json()["code"]) == (422, "REJECTED_RELATION")
        dup = h.post("/kmp/v1/ingest?wait_ms=20000", json={"about": about, "entries": [
            {"id": "obj", "kind": "note", "text": "again", "occurredAt": T0}]})  # fmt: skip
        assert (dup.status_code, dup.json()["code"]) == (409, "DUPLICATE_REF")
        dry = _post(
            h,
            "/kmp/v1/ingest",
            {
                "about": about,
                "dryRun": True,
                "relations": [
                    {"sourceRef": "res-fixed", "targetRef": "obj", "rel": "supports", "semanticClass": "EVIDENTIAL"}
                ],
            },
        )
        assert dry["status"] == "DRY_RUN" and dry["grades"][0]["quality"] == "SUSPECT"


def test_known_at_hides_later_writes_and_replay_rebuilds(stack: Stack) -> None:
    about = f"inc-{uuid.uuid4().hex[:6]}"
    results = _tell(stack, about)
    with http(stack, "kmp-a", "auditor") as h:
        before_fix = results[2]["knownAt"]  # the third write: cause found, rollback not yet decided
        w = _post(h, "/kmp/v1/wake", {"about": about, "knownAt": before_fix})
        assert w["entriesSeen"] == 8 and all(e["knownAt"] <= before_fix for e in w["currentState"])
        a = _post(h, "/kmp/v1/ask", {"about": about, "question": "roll back", "knownAt": before_fix,
                                     "answerPolicy": "BEST_EFFORT"})  # fmt: skip
        assert "dec-rollback" not in {b["ref"] for b in a["because"]}
        n = _post(h, "/kmp/v1/forward", {"about": about, "limit": 50, "knownAt": results[0]["knownAt"]})
        assert {e["ref"] for e in n["entries"]} == {"obj", "obs-5xx", "hyp-pool", "guard-schema"}
        t = h.post("/kmp/v1/trace", json={"about": about, "from": "res-fixed", "to": "obj", "knownAt": before_fix})
        assert (t.status_code, t.json()["code"]) == (404, "REF_NOT_FOUND")
    time.sleep(0.5)
    s = stack.settings
    result = rebuild(projections(s)["kmp"], s.require_kafka(), s.require_database(), s.topics)
    assert result.equal and result.records > 0, result.describe()


def test_a_failed_answer_is_classified(stack: Stack, incident: tuple[str, list[dict[str, Any]]]) -> None:
    about, results = incident
    with http(stack, "kmp-a", "diagnostician") as h:

        def diag(**kw: Any) -> dict[str, Any]:
            return _post(h, "/kmp/v1/diagnose", {"about": about, "question": "why did we roll back?", **kw})

        assert diag(expectedRefs=["dec-rollback"], usedRefs=["dec-rollback"], correct=True)["failure"] == "NONE"
        assert diag(expectedRefs=["never-written"])["failure"] == "INGESTION_GAP"
        early = diag(expectedRefs=["dec-rollback"], knownAt=results[0]["knownAt"])
        assert (early["failure"], early["lost"]) == ("PROJECTION_GAP", ["dec-rollback"])
        assert diag(expectedRefs=["guard-schema"])["failure"] == "RETRIEVAL_GAP"
        assert diag(expectedRefs=["dec-rollback"], usedRefs=[])["failure"] == "READER_GAP"
        assert diag(expectedRefs=["dec-rollback"], usedRefs=["dec-rollback"])["failure"] == "REASONING_GAP"
