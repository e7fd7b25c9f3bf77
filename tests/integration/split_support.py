"""A stack of a test module's own for processors split over instances (``HIVEMEM_INSTANCE``): a split
processor holds its lock shared, so it cannot run beside the session stack's unsplit copy of itself."""

from __future__ import annotations

import dataclasses
import re
import uuid
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from contracts.topics import DEFAULT_PARTITIONS
from deploy.kafka_local import free_port
from hivemem.settings import Settings, write_default_config
from hivemem.stack import ServiceProcess, Stack
from streams.records import OUT_HEADER, LogRecord
from tests.conftest import log_tail, wait_until


@contextmanager
def split_stack(home: Path, tenants: tuple[str, ...], services: dict[str, tuple[list[str], str | None]],
                **settings_: Any) -> Iterator[Stack]:  # fmt: skip
    """Kafka, Postgres and ``services`` (log name -> (``hivemem.services`` arguments, instance or None)),
    started in ``home`` with ``tenants`` (governance on) and ``settings_`` (``Settings`` fields); stopped on
    exit."""
    settings = dataclasses.replace(Settings.from_env(), home=home, kafka_bootstrap=None, database_url=None,
                                   config_path=home / "tenants.toml", api_port=free_port(), **settings_)  # fmt: skip
    write_default_config(settings.config_path, dict.fromkeys(tenants, True))
    st = Stack(settings)
    try:
        st.start_backends(say=lambda *_: None)
        env = st.child_env()
        for name, (args, instance) in services.items():
            extra = {"HIVEMEM_INSTANCE": instance} if instance is not None else {}
            st.services[name] = ServiceProcess(name, args, {**env, **extra}, home / "logs")
            st.services[name].start()
        yield st
    finally:
        st.stop()


def spread_tag(families: Callable[[str], list[list[bytes]]], each: int = 2) -> str:
    """A random test tag whose records' keys put, in each family of keys ``families(tag)`` (one per input
    topic), at least ``each`` keys in every partition (crc32 of the key, as the gate and librdkafka's default
    partitioner place them). A random tag alone left a partition without any of 12 keys in about one run of
    130, and the instance holding that partition never got to work."""
    while True:
        tag = uuid.uuid4().hex[:6]
        counts = [Counter(zlib.crc32(k) % DEFAULT_PARTITIONS for k in keys) for keys in families(tag)]
        if all(c[p] >= each for c in counts for p in range(DEFAULT_PARTITIONS)):
            return tag


def assigned(stack: Stack, service: str, owner: str) -> list[tuple[str, int]]:
    """The partitions ``owner`` (``<processor>@<instance>``) holds after the last rebalance line in the log of
    ``service`` (none when that line was a revocation)."""
    log = stack.settings.home / "logs" / f"{service}.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    lines = [ln for ln in text.splitlines() if f"{owner}: assigned" in ln or f"{owner}: revoked" in ln]
    if not lines or f"{owner}: assigned" not in lines[-1]:
        return []
    return sorted((t, int(p)) for t, p in re.findall(r"\('([^']+)', (\d+)\)", lines[-1]))


def wait_split(stack: Stack, predicate: Callable[[], object], what: str, timeout: float = 120.0,
               detail: Callable[[], str] | None = None) -> None:  # fmt: skip
    """``wait_until`` (1 s polls) for a split stack; a timeout also says ``detail()`` then and what the services
    were doing (their logs' last lines): the instances' state is gone with the stack once the test fails."""
    try:
        wait_until(predicate, timeout=timeout, interval=1, what=what)
    except AssertionError as e:
        raise AssertionError(f"{e}{'; ' + detail() if detail else ''}\n{loops(stack)}\n{log_tails(stack)}") from None


def loops(stack: Stack) -> str:
    """Each processor loop's last report (``hivemem.processor_progress``), its stored input offsets and its
    outbox's unsent rows: where a stuck instance stands (read as the owner; empty if Postgres is gone)."""
    import psycopg

    try:
        with psycopg.connect(stack.settings.require_database(), autocommit=True, connect_timeout=5) as conn:
            progress = conn.execute("SELECT processor, state, detail, heartbeat_at, last_batch_at, lag, records "
                                    "FROM hivemem.processor_progress ORDER BY processor").fetchall()  # fmt: skip
            offsets = conn.execute("SELECT consumer, topic, partition, next_offset FROM hivemem.projection_offsets "
                                   "ORDER BY 1, 2, 3").fetchall()  # fmt: skip
            unsent = conn.execute("SELECT processor, count(*) FROM hivemem.outbox GROUP BY 1 ORDER BY 1").fetchall()
    except Exception as e:  # a diagnostic must not hide the failure it explains
        return f"--- loops: unreadable ({type(e).__name__}: {e})"
    return "\n".join(["--- loops (processor, state, detail, heartbeat, last batch, lag, records)",
                      *(str(r) for r in progress), "--- stored offsets", *(str(r) for r in offsets),
                      "--- unsent outbox rows", *(str(r) for r in unsent)])  # fmt: skip


def log_tails(stack: Stack, lines: int = 15) -> str:
    """The last lines of each service's log, for a failure's message."""
    logs = stack.settings.home / "logs"
    return "\n".join(f"--- {name}\n{log_tail(logs / f'{name}.log', lines)}" for name in stack.services)


def sender(r: LogRecord) -> str:
    """The outbox owner that sent a processor's output record (``<processor>@<instance>`` when split)."""
    return (r.header(OUT_HEADER) or b"?").decode().rsplit(":", 1)[0]
