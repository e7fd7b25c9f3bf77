"""Deployments suspended at run time (CAML: five PII rejections in 24 h), as the gate sees them.

The caml processor publishes DEPLOYMENT_SUSPENDED (and the operator API DEPLOYMENT_REINSTATED)
on ``hivemem.caml.status``; the gate folds them into ``gate.suspended`` in its batch's
transaction and refuses the deployment's envelopes CLAW_SUSPENDED from then on.
"""

from __future__ import annotations

from typing import Protocol

import psycopg


class SuspensionStore(Protocol):
    def is_suspended(self, tenant: str, claw_id: str) -> bool: ...

    def set(self, tenant: str, claw_id: str, suspended: bool, at: int) -> None: ...


class InMemorySuspensionStore:
    def __init__(self) -> None:
        self._suspended: set[tuple[str, str]] = set()

    def is_suspended(self, tenant: str, claw_id: str) -> bool:
        return (tenant, claw_id) in self._suspended

    def set(self, tenant: str, claw_id: str, suspended: bool, at: int) -> None:
        if suspended:
            self._suspended.add((tenant, claw_id))
        else:
            self._suspended.discard((tenant, claw_id))


class PostgresSuspensionStore(InMemorySuspensionStore):
    """Reads the table once (it is small), then keeps it and the set in step."""

    def __init__(self, conn: psycopg.Connection[tuple[object, ...]]) -> None:
        super().__init__()
        self._conn = conn
        for tenant, claw in conn.execute("SELECT tenant, claw_id FROM gate.suspended"):
            self._suspended.add((str(tenant), str(claw)))

    def set(self, tenant: str, claw_id: str, suspended: bool, at: int) -> None:
        if suspended:
            self._conn.execute(
                "INSERT INTO gate.suspended (tenant, claw_id, since_ms) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (tenant, claw_id, at),
            )
        else:
            self._conn.execute("DELETE FROM gate.suspended WHERE tenant = %s AND claw_id = %s", (tenant, claw_id))
        super().set(tenant, claw_id, suspended, at)
