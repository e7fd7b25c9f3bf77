"""``hivemem export`` / ``verify-bundle`` / ``import`` as a user runs them: an encrypted export of a
claw's memory, verified, refused with a wrong passphrase or a flipped byte, imported into another
claw's memory (twice: the second time changes nothing), and read back over HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from hivemem.stack import Stack
from tests.integration.support import http

pytestmark = pytest.mark.integration
TENANT = "kstar-a"


def hivemem(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hivemem.cli", *args], env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip


def test_export_verify_import_from_the_command_line(stack: Stack, env: dict[str, str], tmp_path: Path) -> None:
    src, dst = f"cli-src-{uuid.uuid4().hex[:6]}", f"cli-dst-{uuid.uuid4().hex[:6]}"
    with http(stack, TENANT, src) as h:
        for i in range(5):
            r = h.post("/kstar/v1/traces?wait_ms=20000", json={
                "id": f"t{i}", "timestamp": f"2026-11-0{i + 1}T08:00:00.000Z",
                "situation": {"domain": "education.curriculum"}, "task": {"goal": f"write module {i}"},
                "action": {"type": "author", "parameters": {"module_id": f"m{i}"}}})  # fmt: skip
            assert r.status_code == 200, r.text
    secret = tmp_path / "pass.txt"
    secret.write_text("a long enough passphrase\n")
    bundle = tmp_path / "memory.kstar"
    out = hivemem(env, "export", "--tenant", TENANT, "--claw", src, "--passphrase-file", str(secret),
                  "--from", "2026-11-02", "--to", "2026-11-04", str(bundle))  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    assert bundle.stat().st_mode & 0o777 == 0o600
    assert json.loads(bundle.read_bytes())["format"] == "kstar-bundle+enc"
    ok = hivemem(env, "verify-bundle", "--passphrase-file", str(secret), str(bundle))
    assert ok.returncode == 0 and "valid" in ok.stdout, ok.stdout + ok.stderr
    wrong = tmp_path / "wrong.txt"
    wrong.write_text("not the passphrase")
    bad = hivemem(env, "verify-bundle", "--passphrase-file", str(wrong), str(bundle))
    assert bad.returncode == 1 and "BUNDLE_WRONG_PASSPHRASE" in bad.stdout
    flipped = tmp_path / "flipped.kstar"
    data = bytearray(bundle.read_bytes())
    data[len(data) // 2] ^= 0x01
    flipped.write_bytes(bytes(data))
    assert hivemem(env, "verify-bundle", "--passphrase-file", str(secret), str(flipped)).returncode == 1
    args = ["import", "--tenant", TENANT, "--claw", dst, "--passphrase-file", str(secret), str(bundle)]
    first = hivemem(env, *args)
    assert first.returncode == 0, first.stdout + first.stderr
    assert '"importedCount": 3' in first.stdout  # 2026-11-02 .. 2026-11-04, both ends included
    second = hivemem(env, *args)
    assert second.returncode == 0 and '"importedCount": 0' in second.stdout and '"unchanged": 3' in second.stdout
    with http(stack, TENANT, dst) as h:
        got = h.post("/kstar/v1/traces/query", json={}).json()
    assert [t["recordId"] for t in got] == ["t1", "t2", "t3"]
    refused = hivemem(env, "export", "--tenant", TENANT, "--claw", src, "--types", "memes", str(tmp_path / "x"))
    assert refused.returncode == 2 and "INVALID_TYPES" in refused.stdout
