"""The two user-facing commands: replay (digest equals live) and the demo smoke test."""

import os
import subprocess
import sys
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
    assert "Outcome: 3 episodes accepted" in out.stdout
    assert "BAD_SIGNATURE" in out.stdout and "DUPLICATE" in out.stdout
    assert "DUPLICATE_VOTE" in out.stdout and "shared fact v1 published" in out.stdout


def test_docker_compose_file_parses() -> None:
    doc = yaml.safe_load((ROOT / "deploy" / "docker-compose.yml").read_text())
    assert {"kafka", "postgres", "hivemem"} <= set(doc["services"])
    assert "HIVEMEM_KAFKA_BOOTSTRAP" in doc["services"]["hivemem"]["environment"]
