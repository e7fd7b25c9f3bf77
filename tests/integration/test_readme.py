"""README's shell blocks ("Using it") run as they stand, in a fresh bash, against a fresh
``hivemem up --no-demo``, from a directory laid out like a checkout (``.venv`` beside
``.hivemem``). The only change made to them: the API port, a free one instead of 8080."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from deploy.kafka_local import free_port
from tests.conftest import wait_until
from tests.integration.test_cli import ROOT, _start_up

pytestmark = pytest.mark.integration


def shell_blocks(section: str) -> list[str]:
    """The ```bash blocks of a README section (up to the next ## heading)."""
    text = (ROOT / "README.md").read_text()
    start = text.index(f"\n## {section}\n")
    end = text.find("\n## ", start + 1)
    return re.findall(r"```bash\n(.*?)```", text[start : end if end > 0 else None], re.S)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, int]]:
    here = tmp_path_factory.mktemp("readme")
    (here / ".venv").symlink_to(sys.prefix)  # the virtualenv running the tests, where a checkout has it
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVEMEM_")}
    env.update(HIVEMEM_HOME=str(here / ".hivemem"), HIVEMEM_API_PORT=str(port))
    up = _start_up(env)
    try:
        yield here, port
    finally:
        up.terminate()
        up.wait(60)


def run(checkout: tuple[Path, int], block: str) -> str:
    here, port = checkout
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVEMEM_")}
    script = "set -euo pipefail\n" + block.replace("localhost:8080", f"localhost:{port}")
    done = subprocess.run(["bash", "-c", script], cwd=here, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def json_lines(out: str) -> list[Any]:
    """The JSON documents curl printed, in order (curl adds no newline: one may run into the next
    answer or into the text a command prints after it)."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while at < len(out):
        if out[at] in "[{":
            try:
                doc, end = decoder.raw_decode(out, at)
            except json.JSONDecodeError:
                at += 1
                continue
            found.append(doc)
            at = end
        else:
            at += 1
    return found


def test_using_it_blocks_run_as_written(checkout: tuple[Path, int]) -> None:
    # One shell for the section, as a reader pastes it: the second block uses the first's $TOKEN.
    out = run(checkout, "\n".join(shell_blocks("Using it")))
    answers = json_lines(out)
    wrote, claws, audit = answers[0], answers[1], answers[2]
    assert isinstance(wrote, dict) and re.fullmatch(r"[\w.-]+:\d+:\d+", str(wrote["consistencyToken"]))
    # The write is visible to the reads that pass its token: the claw and its audited capabilities.
    assert isinstance(claws, list) and [c["clawId"] for c in claws] == ["claw-9"], claws
    assert isinstance(audit, list) and [(a["type"], a["outcome"]) for a in audit] == [("capabilities", "ACCEPTED")]
    assert "rebuilt digest" in out  # hivemem replay ran against the same stack
    # The pool: three present claws, a proposal, two YES votes. The proposal read waits for the votes;
    # the decision may come a moment later (README says to read again), and the fact with it.
    proposal = next(a for a in answers[3:] if isinstance(a, dict) and a.get("proposalId") == "p-e142")
    assert [v["status"] for v in proposal["votes"]] == ["RECEIVED", "RECEIVED"], json.dumps(proposal)
    here, port = checkout
    token = subprocess.run([str(here / ".venv/bin/hivemem"), "token", "--tenant", "acme"], cwd=here, text=True,
                           env={**os.environ, "HIVEMEM_HOME": str(here / ".hivemem")}, capture_output=True,
                           check=True).stdout.strip()  # fmt: skip
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {token}"}) as h:
        decided = wait_until(lambda: (p := h.get("/api/v1/proposals/p-e142").json())["status"] != "OPEN" and p,
                             timeout=60, what="decision")  # fmt: skip
        assert decided["status"] == "APPROVED" and decided["tally"]["live"] is False, json.dumps(decided)
        fact = h.get("/api/v1/facts/incident/E142").json()
    assert fact["current"]["version"] == 1 and fact["current"]["proposalId"] == "p-e142", fact


def test_the_embedded_postgres_block_reaches_the_database(checkout: tuple[Path, int]) -> None:
    (block,) = shell_blocks("The embedded Postgres")
    out = run(checkout, block)
    assert " kmms " in out and " governance " in out, out  # \dn lists the read models' schemas
    assert re.search(r"^ gate\S* +\| running +\| +\d+$", out, re.M), out  # the processors' progress
