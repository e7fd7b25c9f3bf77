"""The two user-facing commands: replay (digest equals live) and the demo smoke test (every part of it)."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from hivemem.stack import Stack
from tests.helpers import episode
from tests.integration.support import client

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def test_replay_digest_equals_live(stack: Stack, env: dict[str, str]) -> None:
    client(stack).publish("episode", episode())
    out = subprocess.run([sys.executable, "-m", "hivemem.cli", "replay"], env=env, capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    for name in ("claws", "audit"):
        live = [ln for ln in out.stdout.splitlines() if ln.startswith(f"{name}:") and "live digest" in ln]
        rebuilt = [ln for ln in out.stdout.splitlines() if ln.startswith(f"{name}: rebuilt digest")]
        assert live and rebuilt
        assert live[0].split()[-1] == rebuilt[0].split()[3]
        # Equal digests: the live tables hold the rebuilt rows already, and stay as they are.
        assert f"{name}: tables replaced: none" in out.stdout
    unknown = subprocess.run([sys.executable, "-m", "hivemem.cli", "replay", "--projection", "nope"], env=env,
                             capture_output=True, text=True, timeout=60)  # fmt: skip
    assert unknown.returncode == 2 and "UNKNOWN_PROJECTION" in unknown.stdout


def test_demo_runs_from_a_clean_home(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVEMEM_")}
    env["HIVEMEM_HOME"] = str(tmp_path / "home")
    env["HIVEMEM_API_PORT"] = "0"
    out = subprocess.run([sys.executable, "-m", "hivemem.cli", "up", "--exit-after-demo"], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=400)  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    text = " ".join(out.stdout.split())  # rich wraps lines at the terminal's width
    assert "Outcome: 3 episodes accepted" in text
    assert "BAD_SIGNATURE" in text and "DUPLICATE" in text
    assert "DUPLICATE_VOTE" in text and "shared fact v1 published" in text
    assert "422 PII_REJECTED" in text and "the move superseded the old fact" in text
    # KMP: the decision answered with evidence, and the path from the fix back to the cause.
    assert "-> 'Roll checkout back to v41.' (confidence HIGH" in text
    assert "res-fixed -resolves-> obs-e142 -caused_by-> cause-pool" in text
    # KSTAR: exported, verified (signed), imported; the second import changed nothing.
    assert "valid True, signed True" in text and "2 imported, 0 unchanged; again: 0 imported, 2 unchanged" in text
    # CLAM: a node from the exchange, strengthened by the critic.
    assert "NODE_CREATED" in text and "withstands" in text and "confidence score 2" in text
    assert re.search(r"Dashboard: http://127\.0\.0\.1:\d+/dashboard", text)


def test_docker_compose_file_parses() -> None:
    doc = yaml.safe_load((ROOT / "deploy" / "docker-compose.yml").read_text())
    assert {"kafka", "postgres", "hivemem"} <= set(doc["services"])
    assert "HIVEMEM_KAFKA_BOOTSTRAP" in doc["services"]["hivemem"]["environment"]


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.add(c)
            todo.append(c)
    return out


def _alive(pids: set[int]) -> set[int]:
    return {p for p in pids if Path(f"/proc/{p}").exists() and "Z" not in Path(f"/proc/{p}/stat").read_text()[-200:]}


def _start_up(env: dict[str, str]) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-m", "hivemem.cli", "up", "--no-demo"], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    assert proc.stdout is not None
    deadline = time.monotonic() + 300
    for line in proc.stdout:
        if "HiveMem is up" in line:
            return proc
        assert time.monotonic() < deadline, "hivemem up did not come up"
    raise AssertionError(f"hivemem up exited with {proc.wait()}")


def test_up_leaves_no_process_behind_on_sigterm_or_when_killed(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVEMEM_")}
    env.update(HIVEMEM_HOME=str(tmp_path / "home"), HIVEMEM_API_PORT="0")
    up = _start_up(env)
    kids = _descendants(up.pid)
    assert len(kids) >= 5  # the broker and four services
    up.send_signal(signal.SIGTERM)
    assert up.wait(60) == 0
    assert _alive(kids) == set()
    # Killed outright, it cannot clean up: its children notice (parent-death signal) and exit.
    up = _start_up(env)
    kids = _descendants(up.pid)
    up.kill()
    up.wait()
    deadline = time.monotonic() + 30
    while _alive(kids) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _alive(kids) == set()
    # The embedded Postgres is a daemon (pg_ctl) and outlives a SIGKILL; stop it here.
    pid_file = tmp_path / "home" / "postgres" / "postmaster.pid"
    if pid_file.exists():
        os.kill(int(pid_file.read_text().split()[0]), signal.SIGTERM)
