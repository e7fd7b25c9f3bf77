"""KSTAR end to end (envelope -> gate -> kstar processor -> kstar read model -> HTTP): seed 003's
education scenario — a teacher's evaluation traces with a registered category, a learner profile
fact checked against its schema, perceptions, a skill maturing with use, and evaluation authority
delegated, verified, revoked (its descendant stops verifying) — then export, verify-bundle and
import elsewhere, refused bundles, conflicts, idempotent re-import and a replay of the log."""

from __future__ import annotations

import base64
import copy
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from hivemem.services import projections
from hivemem.stack import Stack
from projections.replay import rebuild
from tests.integration.kmms_support import memory
from tests.integration.support import http, owner_db

pytestmark = pytest.mark.integration
TENANT = "kstar-a"
WAIT = "wait_ms=20000"
TS = "2026-11-20T10:00:00.000Z"


def _iso(delta: timedelta = timedelta()) -> str:
    return (datetime.now(UTC) + delta).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def ok(r: httpx.Response, status: int = 200) -> Any:
    assert r.status_code == status, r.text
    return r.json()


def refused(r: httpx.Response, code: str, status: int = 422) -> None:
    assert r.status_code == status and r.json()["code"] == code, r.text


def evaluation(artifact: str, **outcome: Any) -> dict[str, Any]:
    return {"situation": {"domain": "education.evaluation",
                          "actor": "urn:principal:org:ieee:role:teacher:person:smith", "channel": "lms"},
            "task": {"goal": f"evaluate {artifact}", "constraints": ["rubric v2"]},
            "action": {"type": "evaluate", "parameters": {"artifact_id": artifact, "rubric_id": "rub-1"},
                       "tools_used": ["rubric-grader"]},
            "result": {"success": True, "outcome": outcome or {"scores": [4, 5], "feedback": "clear"}},
            "metadata": {"mode": "interactive", "tags": ["cs101"]}}  # fmt: skip


@pytest.fixture(scope="module")
def teacher(stack: Stack) -> tuple[httpx.Client, str]:
    claw = f"teacher-{uuid.uuid4().hex[:6]}"
    return http(stack, TENANT, claw), claw


def test_traces_with_a_registered_category(teacher: tuple[httpx.Client, str]) -> None:
    h, _ = teacher
    ok(h.post(f"/kstar/v1/trace-categories?{WAIT}", json={"name": "artifact_evaluation", "definition": {
        "domain": "education.evaluation", "required_fields": ["artifact_id", "rubric_id", "scores"]}}))  # fmt: skip
    stored = ok(h.post(f"/kstar/v1/traces?{WAIT}", json={"id": "tr-1", "timestamp": TS, **evaluation("essay-1")}))
    assert stored["status"] == "STORED" and stored["recordId"] == "tr-1" and stored["knownAt"] > 0
    refused(h.post(f"/kstar/v1/traces?{WAIT}", json=evaluation("essay-2", score=4)), "KSTAR_CATEGORY_FIELD_MISSING")
    refused(
        h.post(f"/kstar/v1/traces?{WAIT}", json={"situation": {"domain": "x"}, "action": {"type": "a"}}),
        "KSTAR_INVALID_RECORD",
    )  # no task
    # A trace is immutable: the same id with other content is refused, the same content is unchanged.
    again = ok(h.post(f"/kstar/v1/traces?{WAIT}", json={"id": "tr-1", "timestamp": TS, **evaluation("essay-1")}))
    assert again["status"] == "UNCHANGED"
    other = {"id": "tr-1", "timestamp": TS, **evaluation("essay-9")}
    refused(h.post(f"/kstar/v1/traces?{WAIT}", json=other), "KSTAR_TRACE_IMMUTABLE", 409)
    got = ok(h.get("/kstar/v1/traces/tr-1"))
    assert got["record"]["action"]["parameters"]["artifact_id"] == "essay-1" and got["record"]["timestamp"]
    found = ok(h.post("/kstar/v1/traces/query", json={"filters": {
        "situation.domain": "education.evaluation", "result.success": True,
        "timestamp": {"gte": "2000-01-01T00:00:00Z", "lte": _iso(timedelta(days=1))}}}))  # fmt: skip
    assert [t["recordId"] for t in found] == ["tr-1"]
    assert ok(h.post("/kstar/v1/traces/query", json={"filters": {"action.type": "teach"}})) == []
    refused(h.post("/kstar/v1/traces/query", json={"filters": {"nope.x": 1}}), "KSTAR_BAD_FILTER")
    hits = ok(h.post("/kstar/v1/traces/search", json={"query": "rubric grader"}))
    assert [t["recordId"] for t in hits] == ["tr-1"]


def test_facts_are_checked_against_their_schema(teacher: tuple[httpx.Client, str]) -> None:
    h, _ = teacher
    profile: dict[str, Any] = {"schema": "learner_profile", "source": "intake form",
               "data": {"learning_style": "visual", "strengths": ["algebra"], "growth_areas": ["essays"]}}  # fmt: skip
    ok(h.post(f"/kstar/v1/facts?{WAIT}", json={"id": "f-alice", **profile}))
    bad = copy.deepcopy(profile)
    bad["data"]["learning_style"] = "colour"
    r = h.post(f"/kstar/v1/facts?{WAIT}", json=bad)
    refused(r, "KSTAR_SCHEMA_VIOLATION")
    assert "learning_style" in r.json()["detail"]
    refused(h.post(f"/kstar/v1/facts?{WAIT}", json={"schema": "no_such_schema", "data": {}}), "KSTAR_UNKNOWN_SCHEMA")
    hits = ok(h.post("/kstar/v1/facts/query", json={"schema": "learner_profile", "path": "$.learning_style",
                                                      "value": "visual"}))  # fmt: skip
    assert [x["recordId"] for x in hits] == ["f-alice"]
    assert ok(h.post("/kstar/v1/facts/query", json={"schema": "learner_profile", "path": "$.learning_style",
                                                      "value": "auditory"})) == []  # fmt: skip


def test_perceptions_and_a_maturing_skill(teacher: tuple[httpx.Client, str]) -> None:
    h, _ = teacher
    refused(h.post(f"/kstar/v1/perceptions?{WAIT}", json={"content": "x", "confidence": 1.5}), "KSTAR_INVALID_RECORD")
    for pid, conf in (("p-1", 0.9), ("p-2", 0.5)):
        ok(
            h.post(
                f"/kstar/v1/perceptions?{WAIT}",
                json={
                    "id": pid,
                    "type": "observation",
                    "subject": "learner:alice",
                    "content": "prefers diagrams",
                    "confidence": conf,
                },
            )
        )
    assert [p["recordId"] for p in ok(h.get("/kstar/v1/perceptions?subject=learner:alice"))] == ["p-1"]
    ok(h.post(f"/kstar/v1/skills?{WAIT}", json={"id": "sk-1", "name": "rubric_grading",
                                                 "definition": {"triggers": ["essay submitted"],
                                                                "procedure": "apply rubric v2"}}))  # fmt: skip
    levels = []
    for i in range(5):
        ok(h.post(f"/kstar/v1/skills/rubric_grading/outcome?{WAIT}", json={"outcome": i != 2}))
        levels.append(ok(h.get("/kstar/v1/skills/rubric_grading"))["record"]["maturity"])
    assert [m["usage_count"] for m in levels] == [1, 2, 3, 4, 5]
    assert levels[3]["level"] == "novice" and levels[4]["level"] == "competent"  # 5 uses at 80 %
    assert levels[4]["success_rate"] == pytest.approx(0.8)
    refused(h.post(f"/kstar/v1/skills/nope/outcome?{WAIT}", json={"outcome": True}), "SKILL_NOT_FOUND", 404)


def test_evaluation_authority_delegated_verified_revoked(teacher: tuple[httpx.Client, str]) -> None:
    h, _ = teacher
    ok(h.post(f"/kstar/v1/token-types?{WAIT}", json={"name": "evaluation_authority", "definition": {
        "description": "Can evaluate artifacts", "scope_pattern": "course:{course_id}",
        "required_permissions": ["evaluate", "feedback"]}}))  # fmt: skip
    root = ok(
        h.post(
            f"/kstar/v1/tokens?{WAIT}",
            json={
                "tokenId": "tok-root",
                "tokenType": "delegation",
                "scope": "course:CS101",
                "expiresAt": _iso(timedelta(days=2)),
                "permissions": ["evaluate", "feedback", "delegate"],
            },
        )
    )
    assert root["status"] == "STORED" and root["record"]["signature"] and root["record"]["lineage_hash"]
    child = {"tokenId": "tok-eval", "tokenType": "evaluation_authority", "scope": "course:CS101",
             "permissions": ["evaluate", "feedback"], "expiresAt": _iso(timedelta(days=1)),
             "delegationChain": ["tok-root"]}  # fmt: skip
    ok(h.post(f"/kstar/v1/tokens?{WAIT}", json=child))
    refused(
        h.post(f"/kstar/v1/tokens?{WAIT}", json={**child, "tokenId": "tok-wide", "scope": "course:CS999"}),
        "DELEGATION_SCOPE_WIDENED",
    )
    refused(h.post(f"/kstar/v1/tokens?{WAIT}", json={**child, "tokenId": "tok-late",
                                                      "expiresAt": _iso(timedelta(days=5))}),
            "DELEGATION_EXPIRY_BEYOND_PARENT")  # fmt: skip
    refused(
        h.post(f"/kstar/v1/tokens?{WAIT}", json={**child, "tokenId": "tok-orphan", "delegationChain": ["ghost"]}),
        "DELEGATION_PARENT_UNKNOWN",
    )
    # A token signed by someone else's key, or altered after signing, is refused.
    forged = dict(root["record"], token_id="tok-forged", scope="course:CS102")
    refused(h.post(f"/kstar/v1/tokens?{WAIT}", json={"token": forged}), "TOKEN_BAD_SIGNATURE")

    def verify(token_id: str, scope: str = "course:CS101") -> dict[str, Any]:
        result: dict[str, Any] = ok(h.post("/kstar/v1/tokens/verify", json={"tokenId": token_id, "scope": scope}))
        return result

    assert verify("tok-eval")["valid"] is True
    assert verify("tok-eval", "course:CS999")["reason"] == "Scope mismatch"
    assert verify("nope")["reason"] == "Token not found"
    lineage = ok(h.get("/kstar/v1/tokens/tok-eval/lineage"))
    assert [t["token_id"] for t in lineage] == ["tok-eval", "tok-root"]
    assert ok(h.get("/kstar/v1/tokens/nope/lineage")) == []
    ok(h.post(f"/kstar/v1/tokens/tok-root/revoke?{WAIT}", json={"reason": "term ended"}))
    assert verify("tok-root")["reason"] == "Token revoked"
    after = verify("tok-eval")
    assert after["valid"] is False and after["code"] == "TOKEN_ANCESTOR_REVOKED"
    refused(h.post(f"/kstar/v1/tokens/nope/revoke?{WAIT}", json={"reason": "x"}), "TOKEN_NOT_FOUND", 404)
    assert [t["recordId"] for t in ok(h.get("/kstar/v1/tokens?type=evaluation_authority"))] == ["tok-eval"]


def _memory_rows(stack: Stack, tenant: str, memory: str) -> list[tuple[object, ...]]:
    with owner_db(stack) as conn:
        return conn.execute("SELECT kind, record_id, content_hash FROM kstar.records WHERE tenant = %s AND memory = %s "
                            "ORDER BY kind, record_id", (tenant, memory)).fetchall()  # fmt: skip


def test_export_verify_import_elsewhere(stack: Stack, teacher: tuple[httpx.Client, str]) -> None:
    h, claw = teacher
    # The module's earlier tests filled this memory (tests run in file order); KMMS holds an episode of it.
    told = h.post("/api/v1/memory/episodes?wait_ms=20000", json={"content": "Alice asked how rubric v2 scores "
                                                                  "structure.", "userId": "alice"})  # fmt: skip
    assert told.status_code in (200, 201), told.text
    bundle = ok(h.post("/kstar/v1/export", json={"includeTokens": True}))
    assert [e["user_id"] for e in bundle["extensions"]["hivemem"]["kmms_episodes"]] == ["alice"]
    assert bundle["format"] == "kstar-bundle" and bundle["version"] == "1.0.0"
    assert bundle["statistics"]["trace_count"] == len(bundle["memory"]["traces"]) >= 1
    assert bundle["integrity"]["checksum"].startswith("sha256:") and bundle["integrity"]["signature"]
    check = ok(h.post("/kstar/v1/verify-bundle", json={"bundle": bundle}))
    assert check["valid"] and check["checksum"] == bundle["integrity"]["checksum"]
    # Another tenant, another claw: the memory moves whole (registrations included).
    other = f"moved-{uuid.uuid4().hex[:6]}"
    with http(stack, "kstar-b", other) as h2:
        first = ok(h2.post("/kstar/v1/import", json={"bundle": bundle}))
        assert first["importedCount"] > 0 and not first["refused"] and not first["pending"], first
        assert first["episodes"]["imported"] == 1, first
        second = ok(h2.post("/kstar/v1/import", json={"bundle": bundle}))
        assert second["importedCount"] == 0 and not second["conflicts"] and second["unchanged"] > 0
        assert second["episodes"] == {"imported": 0, "unchanged": 1, "refused": 0, "pending": 0}, second
        # Change one perception there, import again: merge keeps it and reports the conflict.
        ok(h2.post(f"/kstar/v1/perceptions?{WAIT}", json={"id": "p-1", "type": "observation",
                                                           "subject": "learner:alice", "content": "prefers text",
                                                           "confidence": 0.95}))  # fmt: skip
        third = ok(h2.post("/kstar/v1/import", json={"bundle": bundle}))
        assert [c["recordId"] for c in third["conflicts"]] == ["p-1"] and third["importedCount"] == 0
        assert ok(h2.get("/kstar/v1/perceptions?subject=learner:alice"))[0]["record"]["content"] == "prefers text"
        refused(h2.post("/kstar/v1/import", json={"bundle": bundle, "mode": "replace"}), "CONFIRMATION_REQUIRED")
        ok(h2.post("/kstar/v1/import", json={"bundle": bundle, "mode": "replace", "confirm": True}))
        assert ok(h2.get("/kstar/v1/perceptions?subject=learner:alice"))[0]["record"]["content"] == "prefers diagrams"
        assert ok(h2.post("/kstar/v1/tokens/verify", json={"tokenId": "tok-root", "scope": "course:CS101"}))[
            "reason"] == "Token revoked"  # fmt: skip
    assert _memory_rows(stack, TENANT, claw) == _memory_rows(stack, "kstar-b", other)


def test_tampered_wrongly_signed_or_wrongly_decrypted_bundles_are_refused(teacher: tuple[httpx.Client, str]) -> None:
    h, _ = teacher
    bundle = ok(h.post("/kstar/v1/export", json={}))
    tampered = copy.deepcopy(bundle)
    tampered["memory"]["traces"][0]["task"]["goal"] = "evaluate essay-X"
    refused(h.post("/kstar/v1/verify-bundle", json={"bundle": tampered}), "BUNDLE_CHECKSUM_MISMATCH")
    refused(h.post("/kstar/v1/import", json={"bundle": tampered}), "BUNDLE_CHECKSUM_MISMATCH")
    resigned = copy.deepcopy(bundle)
    sig = bytearray(base64.b64decode(resigned["integrity"]["signature"]))
    sig[0] ^= 1
    resigned["integrity"]["signature"] = base64.b64encode(bytes(sig)).decode()
    refused(h.post("/kstar/v1/verify-bundle", json={"bundle": resigned}), "BUNDLE_BAD_SIGNATURE")
    sealed = ok(h.post("/kstar/v1/export", json={"passphrase": "correct horse battery"}))
    assert sealed["format"] == "kstar-bundle+enc" and "memory" not in json.dumps(sealed)
    refused(
        h.post("/kstar/v1/verify-bundle", json={"bundle": sealed, "passphrase": "wrong passphrase"}),
        "BUNDLE_WRONG_PASSPHRASE",
    )
    assert ok(h.post("/kstar/v1/verify-bundle", json={"bundle": sealed, "passphrase": "correct horse battery"}))[
        "valid"]  # fmt: skip
    refused(h.post("/kstar/v1/verify-bundle", json={"bundle": sealed}), "BUNDLE_ENCRYPTED")


def test_memories_are_their_owners(stack: Stack, teacher: tuple[httpx.Client, str]) -> None:
    h_teacher, claw = teacher
    learner = f"learner-{uuid.uuid4().hex[:6]}"
    with http(stack, TENANT, learner) as h:  # the learner's side of the scenario, in the learner's own memory
        submission = {"id": "sub-1", "timestamp": TS, "situation": {"domain": "education.submission",
                      "actor": "urn:principal:org:ieee:role:learner:person:alice"},
                      "task": {"goal": "submit essay-1"}, "action": {"type": "submit",
                      "parameters": {"artifact_id": "essay-1"}}, "result": {"success": True}}  # fmt: skip
        assert ok(h.post(f"/kstar/v1/traces?{WAIT}", json=submission))["status"] == "STORED"
        refused(h.get(f"/kstar/v1/traces/tr-1?memory={claw}"), "KSTAR_NOT_YOUR_MEMORY", 403)
        refused(h.post(f"/kstar/v1/traces?memory={claw}&{WAIT}", json=submission), "KSTAR_NOT_YOUR_MEMORY", 403)
    refused(h_teacher.get("/kstar/v1/traces/sub-1"), "NOT_FOUND", 404)  # not in the teacher's memory
    with http(stack, "kstar-b", claw) as h:  # same claw name, other tenant: nothing
        assert ok(h.post("/kstar/v1/traces/query", json={})) == []


def test_forget_and_replay(stack: Stack) -> None:
    claw = f"forgetful-{uuid.uuid4().hex[:6]}"
    with http(stack, TENANT, claw) as h:
        ok(h.post(f"/kstar/v1/traces?{WAIT}", json={"id": "tr-x", **evaluation("essay-x")}))
        refused(h.delete(f"/kstar/v1/memory?{WAIT}"), "CONFIRMATION_REQUIRED")
        assert ok(h.delete(f"/kstar/v1/memory?confirm=true&{WAIT}"))["status"] == "FORGOTTEN"
        assert ok(h.post("/kstar/v1/traces/query", json={})) == []
        ok(h.post(f"/kstar/v1/traces?{WAIT}", json={"id": "tr-x", **evaluation("essay-y")}))  # a fresh start
        assert ok(h.get("/kstar/v1/stats"))["counts"] == {"trace": 1}
    s = stack.settings
    result = rebuild(projections(s)["kstar"], s.require_kafka(), s.require_database(), s.topics)
    assert result.equal and result.records > 0, result.describe()


def _unit_texts(stack: Stack, tenant: str, claw: str) -> list[str]:
    with owner_db(stack) as conn:
        rows = conn.execute("SELECT text FROM kmms.kmms_units WHERE tenant = %s AND claw_id = %s ORDER BY ordinal",
                            (tenant, claw)).fetchall()  # fmt: skip
    return [str(r[0]) for r in rows]


def test_a_conversation_moves_with_its_turns(stack: Stack) -> None:
    """An exported conversation carries its turns (a layout over its content): the importing memory cuts the same
    rounds, each its own hit. Without them an import cut the chat into paragraphs of up to 1,200 characters."""
    claw, other = f"talker-{uuid.uuid4().hex[:6]}", f"moved-{uuid.uuid4().hex[:6]}"
    said = [
        ("Melanie", "I finally finished the painting of the lake at sunset, the one I started in the spring."),
        ("Caroline", "Congrats! I spent the weekend at the adoption agency filling in forms for the home study."),
        ("Melanie", "How did the interview go? I remember you were nervous about the questions on your income."),
        ("Caroline", "It went well. They asked about my job at the counselling centre and my support network."),
        ("Melanie", "My kids want to go camping at the lake again in August, the tent still smells of smoke."),
        ("Caroline", "Take me with you! I have not slept under the stars since the road trip to Colorado."),
    ]
    turns = [{"role": "user", "name": who, "content": text + " " + "We talked for a long while about it. " * 4}
             for who, text in said]  # fmt: skip
    mem = memory(stack, TENANT, claw=claw, user_id="alice")
    ep = mem.add(turns, session_id="s-1", occurred_at="2026-04-01T10:00:00Z").episode_id
    mem.wait_indexed([ep], timeout_s=120)
    with http(stack, TENANT, claw) as h:
        bundle = ok(h.post("/kstar/v1/export", json={}))
    [exported] = bundle["extensions"]["hivemem"]["kmms_episodes"]
    assert exported["turn_layout"] == [{"role": "user", "name": t["name"], "chars": len(t["content"])} for t in turns]
    with http(stack, "kstar-b", other) as h2:
        assert ok(h2.post("/kstar/v1/import", json={"bundle": bundle}))["episodes"]["imported"] == 1
    moved = memory(stack, "kstar-b", claw=other, user_id="alice")
    moved.wait_indexed([ep], timeout_s=120)
    assert _unit_texts(stack, "kstar-b", other) == _unit_texts(stack, TENANT, claw)
    assert len(_unit_texts(stack, "kstar-b", other)) == len(turns)  # a round a turn, as it was told
    hits = moved.search("Where did Caroline go on a road trip?", k=3).hits
    assert hits[0].text.startswith("user: Caroline: Take me with you!"), [h.text[:60] for h in hits]
