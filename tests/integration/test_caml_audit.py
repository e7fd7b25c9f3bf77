"""CAML audit: append-only for the app role, daily Merkle roots on the log, inclusion proofs,
and ``hivemem audit verify`` catching an edited row."""

from __future__ import annotations

import subprocess
import sys
import uuid
from datetime import UTC, datetime

import psycopg
import pytest

from governance.caml.merkle import canonical_json, leaf_hash, verify_inclusion
from hivemem.stack import Stack
from tests.conftest import wait_until
from tests.integration.caml_support import anomaly, caml
from tests.integration.support import http, owner_db

pytestmark = pytest.mark.integration


def _hivemem(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hivemem.cli", *args], env=stack.child_env(), capture_output=True,
                          text=True, timeout=180)  # fmt: skip


def test_app_role_can_only_insert_and_select_audit_rows(stack: Stack) -> None:
    anomaly(caml(stack, "caml-b"), f"Audit rights check {uuid.uuid4().hex[:6]}: customs holds rise at the border")
    s = stack.settings
    with psycopg.connect(s.app_database_url(s.load_config()), autocommit=True) as app:
        for stmt in ("UPDATE caml.caml_audit_log SET outcome = 'ACCEPTED'", "DELETE FROM caml.caml_audit_log"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege), app.transaction():
                app.execute("SELECT set_config('hivemem.tenant', 'caml-b', true)")
                app.execute(stmt)
    # Not even the owner edits it in place: the trigger refuses UPDATE and DELETE for every role.
    with owner_db(stack) as conn, pytest.raises(psycopg.errors.RaiseException):
        conn.execute("UPDATE caml.caml_audit_log SET outcome = 'ACCEPTED' WHERE tenant = 'caml-b'")


def test_daily_roots_proofs_and_verify(stack: Stack) -> None:
    c = caml(stack, "caml-b")
    oid = anomaly(c, f"Merkle check {uuid.uuid4().hex[:6]}: port congestion delays reefer containers")
    with http(stack, "caml-b") as h:
        h.post("/caml/v1/recall", json={"query": "port congestion", "k": 3})  # a RECALL entry too
    with owner_db(stack) as conn:
        entry = wait_until(lambda: conn.execute("SELECT entry_id FROM caml.caml_audit_log WHERE observation_id = %s",
                                                (oid,)).fetchone(), what="audit entry")  # fmt: skip
    entry_id = str(entry[0])
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    # Today is still open: this root is a checkpoint of the day so far (the tree is append-only).
    out = _hivemem(stack, "audit", "roots", "--day", today)
    assert out.returncode == 0, out.stderr
    assert f"{today} caml-b:" in out.stdout and f"{today} _global:" in out.stdout
    with http(stack, "caml-b") as h:
        roots = wait_until(lambda: [r for r in h.get("/caml/v1/transparency/roots", params={"day": today}).json()
                                    if r["scope"] == "caml-b"], what="root folded")  # fmt: skip
        assert {r["scope"] for r in h.get("/caml/v1/transparency/roots").json()} >= {"caml-b", "_global"}
        proof = h.get(f"/caml/v1/transparency/proof/{entry_id}").json()
        assert h.get(f"/caml/v1/transparency/proof/{uuid.uuid4()}").status_code == 404
    with http(stack, "caml-a") as other:  # another operator cannot ask for this entry's proof
        assert other.get(f"/caml/v1/transparency/proof/{entry_id}").status_code == 404
    assert proof["verified"] is True and proof["root"] == roots[0]["root"]
    assert leaf_hash(canonical_json(proof["entry"])).hex() == proof["leafHash"]  # the client recomputes the leaf
    path = [bytes.fromhex(p) for p in proof["path"]]
    leaf, root = bytes.fromhex(proof["leafHash"]), bytes.fromhex(proof["root"])
    assert verify_inclusion(leaf, proof["leafIndex"], proof["treeSize"], path, root)
    flipped = bytes([leaf[0] ^ 1]) + leaf[1:]
    assert not verify_inclusion(flipped, proof["leafIndex"], proof["treeSize"], path, root)

    ok = _hivemem(stack, "audit", "verify", "--day", today)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ": OK" in ok.stdout
    # Someone with the owner's rights edits a row behind the trigger's back: verify says which.
    with owner_db(stack) as conn:
        conn.execute("ALTER TABLE caml.caml_audit_log DISABLE TRIGGER audit_append_only")
        try:
            conn.execute("UPDATE caml.caml_audit_log SET outcome = 'REFUSED' WHERE entry_id = %s", (entry_id,))
            bad = _hivemem(stack, "audit", "verify", "--day", today)
        finally:
            conn.execute("UPDATE caml.caml_audit_log SET outcome = 'ACCEPTED' WHERE entry_id = %s", (entry_id,))
            conn.execute("ALTER TABLE caml.caml_audit_log ENABLE TRIGGER audit_append_only")
    assert bad.returncode == 1
    assert "altered" in bad.stdout + bad.stderr
