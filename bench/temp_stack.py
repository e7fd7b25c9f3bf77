"""A whole HiveMem (Kafka, Postgres, services) in a temporary home, for one benchmark run; the home is removed after."""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from deploy.kafka_local import free_port
from hivemem.settings import Settings, write_default_config
from hivemem.stack import SERVICES, ServiceProcess, Stack


@contextmanager
def running_stack(tenants: dict[str, bool] | None = None, tiers: dict[str, str] | None = None,
                  services: list[str] | None = None, gates: int = 1) -> Iterator[Stack]:  # fmt: skip
    """``tenants`` (name -> governance enabled) and ``tiers`` (name -> CAML tier) for the tenants file; default:
    the demo tenants on the pro tier. ``services``: which to start (default: all). ``gates`` > 1: that many
    gate instances splitting the partitions (HIVEMEM_INSTANCE 0, 1, ...) instead of one gate."""
    home = Path(tempfile.mkdtemp(prefix="hivemem-bench-"))
    if tenants is not None or tiers is not None:
        write_default_config(home / "tenants.toml", tenants, tiers)
    settings = dataclasses.replace(Settings.from_env(), home=home, kafka_bootstrap=None, database_url=None,
                                   config_path=home / "tenants.toml", api_port=free_port())  # fmt: skip
    stack = Stack(settings)
    try:
        stack.start_backends(say=lambda *_: None)
        if gates > 1:
            names = [n for n in (services or list(SERVICES)) if n != "gate"]
            env = stack.child_env()
            for i in range(gates):
                gate = ServiceProcess(f"gate-{i}", ["gate"], {**env, "HIVEMEM_INSTANCE": str(i)}, home / "logs")
                gate.start()
                stack.services[gate.name] = gate
            stack.start_services(names)
        else:
            stack.start_services(services)
        yield stack
    finally:
        stack.stop()
        # The broker's log and the database of one run: 0.3-3.5 GB each, which filled the disk after a day of runs.
        shutil.rmtree(home, ignore_errors=True)


@contextmanager
def temporary_stack(tenants: dict[str, bool] | None = None, tiers: dict[str, str] | None = None) -> Iterator[Settings]:
    with running_stack(tenants, tiers) as stack:
        yield stack.settings


def stack_pids(stack: Stack) -> dict[str, int]:
    """The stack's processes by name: each service, the Kafka broker, the Postgres server."""
    pids = {name: svc.proc.pid for name, svc in stack.services.items() if svc.proc is not None}
    if stack.kafka is not None and stack.kafka.proc is not None:
        pids["kafka"] = stack.kafka.proc.pid
    if stack.postgres is not None:
        for pidfile in stack.postgres.pgdata.rglob("postmaster.pid"):
            pids["postgres"] = int(pidfile.read_text().split()[0])
    return pids
