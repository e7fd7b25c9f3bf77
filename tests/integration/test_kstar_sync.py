"""KSTAR sync between two real HiveMem deployments (each its own Kafka, Postgres, secrets and
services): the session's stack is the local primary, a second stack the remote secondary. A record
of each kind changed on both sides is settled by its kind's policy (traces and perceptions local
wins; facts and tokens remote wins), one-sided changes travel both ways, and a second sync finds
nothing left to do."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from deploy.kafka_local import free_port
from hivemem.settings import Settings, write_default_config
from hivemem.stack import Stack
from projections.auth import mint_token
from tests.integration.support import http

pytestmark = pytest.mark.integration
TENANT = "kstar-a"
WAIT = "wait_ms=20000"
TS = "2026-11-21T09:00:00.000Z"


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    home = Path(tmp_path_factory.mktemp("remote"))
    settings = dataclasses.replace(Settings.from_env(), home=home, kafka_bootstrap=None, database_url=None,
                                   config_path=home / "tenants.toml", api_port=free_port())  # fmt: skip
    write_default_config(settings.config_path, {TENANT: True})  # fresh secrets: another deployment
    st = Stack(settings)
    try:
        st.start_backends(say=lambda *_: None)
        st.start_services(["gate", "kstar", "projectors", "api"])
        yield st
    finally:
        st.stop()


def ok(r: httpx.Response) -> Any:
    assert r.status_code == 200, r.text
    return r.json()


def trace(goal: str) -> dict[str, Any]:
    return {"timestamp": TS, "situation": {"domain": "education.evaluation"}, "task": {"goal": goal},
            "action": {"type": "evaluate"}}  # fmt: skip


def fill(h: httpx.Client, side: str) -> None:
    ok(h.post(f"/kstar/v1/traces?{WAIT}", json={"id": f"t-{side}", **trace(f"only {side}")}))
    ok(h.post(f"/kstar/v1/traces?{WAIT}", json={"id": "t-both", **trace(f"both, {side} version")}))
    ok(
        h.post(
            f"/kstar/v1/facts?{WAIT}",
            json={
                "id": "f-1",
                "schema": "learner_profile",
                "created_at": TS,
                "updated_at": TS,
                "data": {"learning_style": "visual" if side == "local" else "auditory"},
            },
        )
    )
    ok(
        h.post(
            f"/kstar/v1/perceptions?{WAIT}",
            json={
                "id": "p-1",
                "subject": "learner:alice",
                "content": f"{side} view",
                "confidence": 0.9,
                "created_at": TS,
                "updated_at": TS,
            },
        )
    )
    ok(h.post(f"/kstar/v1/tokens?{WAIT}", json={"tokenId": "tok-c", "tokenType": "capability_grant",
                                                 "scope": f"course:{side}", "permissions": ["evaluate"]}))  # fmt: skip


def test_two_deployments_sync_with_a_conflict_on_each_kind(stack: Stack, remote: Stack) -> None:
    claw = f"sync-{uuid.uuid4().hex[:6]}"
    remote_api = f"http://127.0.0.1:{remote.settings.api_port}"
    remote_token = mint_token(remote.settings.load_config().token_secret, TENANT, "sync", claw_id=claw)
    with (
        http(stack, TENANT, claw) as here,
        httpx.Client(base_url=remote_api, timeout=60, headers={"Authorization": f"Bearer {remote_token}"}) as there,
    ):
        fill(here, "local")
        ok(here.post(f"/kstar/v1/skills?{WAIT}", json={"id": "sk-1", "name": "grading",
                                                        "definition": {"procedure": "rubric"}}))  # fmt: skip
        fill(there, "remote")
        ok(there.post(f"/kstar/v1/skills?{WAIT}", json={"id": "sk-1", "name": "grading",
                                                         "definition": {"procedure": "checklist"}}))  # fmt: skip
        result = ok(here.post("/kstar/v1/sync", json={"remoteUrl": remote_api, "remoteToken": remote_token}))
        winners = {(c["kind"], c["recordId"]): c["winner"] for c in result["conflicts"]}
        assert winners == {
            ("trace", "t-both"): "local_wins",
            ("fact", "f-1"): "remote_wins",
            ("perception", "p-1"): "local_wins",
            ("control_token", "tok-c"): "remote_wins",
            ("skill", "sk-1"): "local_wins",
        }, result
        assert result["pulled"] == 3 and result["pushed"] == 4 and not result["failed"], result  # fmt: skip

        def doc(h: httpx.Client, kind_path: str, rid: str) -> dict[str, Any]:
            record: dict[str, Any] = ok(h.get(f"/kstar/v1/{kind_path}/{rid}"))["record"]
            return record

        for h in (here, there):  # both sides now read the same
            assert doc(h, "traces", "t-both")["task"]["goal"] == "both, local version"
            assert doc(h, "traces", "t-remote")["task"]["goal"] == "only remote"
            assert doc(h, "traces", "t-local")["task"]["goal"] == "only local"
            facts = ok(h.get("/kstar/v1/facts?schema=learner_profile"))
            assert [f["record"]["data"]["learning_style"] for f in facts] == ["auditory"]
            assert ok(h.get("/kstar/v1/perceptions?subject=learner:alice"))[0]["record"]["content"] == "local view"
            assert ok(h.get("/kstar/v1/skills/grading"))["record"]["definition"]["procedure"] == "rubric"
            verdict = ok(h.post("/kstar/v1/tokens/verify", json={"tokenId": "tok-c", "scope": "course:remote"}))
            assert verdict["valid"], verdict
        again = ok(here.post("/kstar/v1/sync", json={"remoteUrl": remote_api, "remoteToken": remote_token}))
        assert again["pulled"] == 0 and again["pushed"] == 0 and again["conflicts"] == [], again
        refused = here.post("/kstar/v1/sync", json={"remoteUrl": "http://example.com", "remoteToken": "x"})
        assert refused.status_code == 422 and refused.json()["code"] == "SYNC_HTTPS_REQUIRED"


def _rows(st: Stack, memory: str) -> list[tuple[object, ...]]:
    with psycopg.connect(st.settings.require_database()) as conn:
        return conn.execute("SELECT kind, record_id, content_hash, doc FROM kstar.records WHERE tenant = %s AND "
                            "memory = %s ORDER BY kind, record_id", (TENANT, memory)).fetchall()  # fmt: skip


def test_a_memory_moves_to_a_fresh_deployment_whole(stack: Stack, remote: Stack) -> None:
    """Export here (tokens included, encrypted), import there: the memory reads the same, record for record."""
    claw = f"mover-{uuid.uuid4().hex[:6]}"
    remote_api = f"http://127.0.0.1:{remote.settings.api_port}"
    remote_token = mint_token(remote.settings.load_config().token_secret, TENANT, "mover", claw_id=claw)
    with http(stack, TENANT, claw) as here:
        fill(here, "local")
        ok(here.post(f"/kstar/v1/token-types?{WAIT}", json={"name": "evaluation_authority", "definition": {
            "description": "Can evaluate artifacts", "scope_pattern": "course:{course_id}",
            "required_permissions": ["evaluate", "feedback"]}}))  # fmt: skip
        root = {"tokenId": "tok-root", "tokenType": "delegation", "scope": "course:CS101",
                "permissions": ["evaluate", "feedback", "delegate"]}  # fmt: skip
        ok(here.post(f"/kstar/v1/tokens?{WAIT}", json=root))
        child = {"tokenId": "tok-eval", "tokenType": "evaluation_authority", "scope": "course:CS101",
                 "permissions": ["evaluate", "feedback"], "delegationChain": ["tok-root"]}  # fmt: skip
        ok(here.post(f"/kstar/v1/tokens?{WAIT}", json=child))
        ok(here.post(f"/kstar/v1/tokens/tok-root/revoke?{WAIT}", json={"reason": "moved"}))
        sealed = ok(here.post("/kstar/v1/export", json={"includeTokens": True, "passphrase": "a moving passphrase"}))
    with httpx.Client(base_url=remote_api, timeout=60, headers={"Authorization": f"Bearer {remote_token}"}) as there:
        report = ok(there.post("/kstar/v1/import", json={"bundle": sealed, "passphrase": "a moving passphrase"}))
        assert report["importedCount"] > 0 and not report["refused"] and not report["pending"], report
        verdict = ok(there.post("/kstar/v1/tokens/verify", json={"tokenId": "tok-eval", "scope": "course:CS101"}))
        assert verdict["code"] == "TOKEN_ANCESTOR_REVOKED"
    assert _rows(stack, claw) == _rows(remote, claw)
