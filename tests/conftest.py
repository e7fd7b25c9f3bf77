"""Session fixtures: one real Kafka (KRaft) and one embedded Postgres for the whole run,
plus the HiveMem services (gate, projectors, API) as real child processes."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy.kafka_local import free_port
from hivemem.settings import DEFAULT_TENANTS, Settings, write_default_config
from hivemem.stack import Stack

PRESENCE_WINDOW_S = 6.0
POOL_TENANTS = ("pool-seed", "pool-stuff", "pool-basis", "pool-fifty", "pool-kill", "pool-bench")
# CAML: three operators sharing the collective pool, one on the free tier (20 writes/h), one for faults.
CAML_TENANTS = ("caml-a", "caml-b", "caml-c", "caml-free", "caml-kill")
# KMMS: memories of their own; one tenant refuses episodes with personal data instead of redacting.
MEMORY_TENANTS = ("mem-a", "mem-b", "mem-reject", "mem-kill")
KMP_TENANTS = ("kmp-a", "kmp-b", "kmp-kill", "kmp-leak")
KSTAR_TENANTS = ("kstar-a", "kstar-b", "kstar-kill", "kstar-mcp")
CLAM_TENANTS = ("clam-a", "clam-b", "clam-kill")
# CLAM's clock is the log's: a short decay time lets a test see forgetting without waiting an hour.
CLAM_CONFIG = "\n[clam]\ndecay_time_ms = 3000\n"


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    home = Path(tmp_path_factory.mktemp("hm"))
    settings = dataclasses.replace(
        Settings.from_env(), home=home, kafka_bootstrap=None, database_url=None,
        config_path=home / "tenants.toml", api_port=free_port(),
        presence_window_s=PRESENCE_WINDOW_S, expiry_grace_ms=500,
    )  # fmt: skip
    # Governance tests each get a tenant of their own: the quorum basis is per tenant.
    write_default_config(settings.config_path, {**DEFAULT_TENANTS, **dict.fromkeys(POOL_TENANTS, True),
                                                **dict.fromkeys(CAML_TENANTS, True),
                                                **dict.fromkeys(MEMORY_TENANTS, True),
                                                **dict.fromkeys(KMP_TENANTS, True),
                                                **dict.fromkeys(KSTAR_TENANTS, True),
                                                **dict.fromkeys(CLAM_TENANTS, True), "nogov": False},
                         tiers={"caml-free": "free", "caml-kill": "enterprise"},
                         memory_pii={"mem-reject": "reject"})  # fmt: skip
    with settings.config_path.open("a") as f:
        f.write(CLAM_CONFIG)
    st = Stack(settings)
    try:
        st.start_backends(say=lambda *_: None)
        st.start_services()
        yield st
    finally:
        st.stop()


@pytest.fixture(scope="session")
def env(stack: Stack) -> dict[str, str]:
    return stack.child_env()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``fuzz`` run last. A fuzzer writes what it makes into the shared stack, and a queue it
    leaves behind would delay every later test that waits on a processor."""
    items.sort(key=lambda item: item.get_closest_marker("fuzz") is not None)  # stable: the rest keep their order


def log_tail(path: Path, lines: int = 15) -> str:
    """The last ``lines`` lines of a log, for a failure's message."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@pytest.fixture(autouse=True)
def _shared_stack_survives(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test on the shared stack: did its broker and services survive? A test that leaves one dead
    fails with the dead one's last log lines, and the stack is restarted as ``hivemem up`` restarts it, so
    one crash is one red test and not every later test timing out against a dead service."""
    yield
    if "stack" not in request.fixturenames:
        return
    st: Stack = request.getfixturevalue("stack")
    logs = st.settings.home / "logs"
    dead = [name for name, svc in st.services.items() if not svc.alive()]
    kafka_dead = st.kafka is not None and not st.kafka.alive()
    if not dead and not kafka_dead:
        return
    tails = [f"--- {name} ({logs / (name + '.log')}):\n{log_tail(logs / (name + '.log'))}" for name in dead]
    if kafka_dead:
        tails.append(f"--- kafka:\n{log_tail(st.settings.home / 'kafka' / 'broker.log')}")
    st.supervise_once()
    try:
        st.wait_ready()
    except RuntimeError as exc:  # still say what died, and why
        tails.append(f"--- after the restart: {exc}")
    pytest.fail("left dead after this test (restarted): " + ", ".join(dead + ["kafka"] * kafka_dead) + "\n"
                + "\n".join(tails), pytrace=False)  # fmt: skip


def wait_until(predicate, timeout: float = 60.0, interval: float = 0.2, what: str = "condition"):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


os.environ.setdefault("PYTHONUNBUFFERED", "1")
