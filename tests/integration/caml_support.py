"""Helpers for the CAML integration tests: claws of several operators over HTTP and Kafka."""

from __future__ import annotations

import uuid
from typing import Any

from hivemem.stack import Stack
from producers.caml_client import CamlClient
from projections.auth import mint_token
from tests.integration.support import owner_db

ANOMALY_PATTERN = {"signal": "invoice approval latency", "baseline": "2 h", "observed": "9 h", "window": "7 days"}


def caml(stack: Stack, tenant: str, claw: str | None = None) -> CamlClient:
    token = mint_token(stack.settings.load_config().token_secret, tenant, "test", claw or f"c-{uuid.uuid4().hex[:6]}")
    return CamlClient(stack.api_url, token, timeout_s=60)


def evidence(n: int = 3) -> list[str]:
    return [f"trace-{uuid.uuid4().hex[:12]}" for _ in range(n)]


def anomaly(client: CamlClient, summary: str, **kw: Any) -> str:
    """Observe a clean ANOMALY_DETECTED (allowed at reputation 0); return its id."""
    result = client.observe("ANOMALY_DETECTED", kw.pop("domain", "finance"), summary, pattern=ANOMALY_PATTERN,
                            evidence=evidence(), **kw)  # fmt: skip
    assert result is not None and result.status == "ACCEPTED", result
    return result.observation_id


def rep_history(stack: Stack, tenant: str, claw: str, at_least: int = 1) -> list[tuple[str, float, float]]:
    """The deployment's reputation events (waiting until ``at_least`` are folded: the verdict
    and the events travel on different topics)."""
    from tests.conftest import wait_until

    return wait_until(lambda: _history(stack, tenant, claw) if len(_history(stack, tenant, claw)) >= at_least
                      else None, timeout=30, what=f"{at_least} reputation events")  # fmt: skip


def _history(stack: Stack, tenant: str, claw: str) -> list[tuple[str, float, float]]:
    with owner_db(stack) as conn:
        rows = conn.execute("SELECT reason, delta, score FROM caml.caml_rep_events WHERE tenant = %s AND "
                            "claw_id = %s ORDER BY seq", (tenant, claw)).fetchall()  # fmt: skip
    return [(str(r), float(str(d)), float(str(s))) for r, d, s in rows]


def claw_of(client: CamlClient) -> str:
    import jwt

    token = client._http.headers["authorization"].split()[1]
    return str(jwt.decode(token, options={"verify_signature": False})["claw"])
