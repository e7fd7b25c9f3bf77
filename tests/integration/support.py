"""Helpers for integration tests against the session stack."""

from __future__ import annotations

import signal
import threading
import time
import uuid

import httpx
import psycopg

from hivemem.demo import claw_client
from hivemem.stack import ServiceProcess, Stack
from producers.claw_client import ClawClient
from projections.auth import mint_token


def client(stack: Stack, claw_id: str | None = None, tenant: str = "acme") -> ClawClient:
    return claw_client(stack.settings, tenant, claw_id or f"claw-{uuid.uuid4().hex[:6]}")


def http(stack: Stack, tenant: str = "acme", claw: str | None = None) -> httpx.Client:
    token = mint_token(stack.settings.load_config().token_secret, tenant, "test", claw)
    return httpx.Client(base_url=stack.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=60)


def owner_db(stack: Stack) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(stack.settings.require_database(), autocommit=True)


def count(stack: Stack, sql: str, *args: object) -> int:
    """The first column of the first row of ``sql`` (a count), as the owner role."""
    with owner_db(stack) as conn:
        row = conn.execute(sql, args).fetchone()  # type: ignore[arg-type]
    return int(str(row[0])) if row else 0


def audit_codes(stack: Stack, trace: str, tenant: str = "acme") -> list[str]:
    with owner_db(stack) as conn:
        rows = conn.execute("SELECT coalesce(reason_code, outcome) FROM audit.events WHERE tenant = %s AND "
                            "trace_id = %s ORDER BY source_offset", (tenant, trace)).fetchall()  # fmt: skip
    return [str(r[0]) for r in rows]


def kill_and_restart(svc: ServiceProcess, after_s: float) -> threading.Thread:
    """A thread, not yet started, that waits ``after_s``, SIGKILLs ``svc`` (mid-stream) and starts it again."""

    def run() -> None:
        time.sleep(after_s)
        assert svc.proc is not None
        svc.proc.send_signal(signal.SIGKILL)
        svc.proc.wait()
        svc.start()

    return threading.Thread(target=run)
