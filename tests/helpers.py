"""Shared test helpers: tenant policies, signed envelopes, gate config."""

from __future__ import annotations

import time
import uuid

from contracts.topics import TopicNames
from governance.gate.checks import GateConfig
from governance.identity import DeploymentKeys, TenantPolicy, derive_deployment_key
from producers.claw_client import ClawClient

SECRET = bytes(range(32))
TENANTS = {
    "acme": TenantPolicy("acme", {"op1": SECRET}, suspended_claws=frozenset({"claw-bad"})),
    "globex": TenantPolicy("globex", {"op1": SECRET[::-1]}, governance_enabled=False),
}


def gate_config(names: TopicNames | None = None) -> GateConfig:
    return GateConfig(topics=names or TopicNames(), tenants=TENANTS, keys=DeploymentKeys(TENANTS))


class _NoProducer:
    def produce(self, *a: object, **k: object) -> None:
        raise AssertionError("unit tests do not publish")


def offline_client(tenant: str = "acme", claw_id: str = "claw-1") -> ClawClient:
    key = derive_deployment_key(TENANTS[tenant].operator_secrets["op1"], tenant, claw_id)
    return ClawClient("unused:0", tenant, claw_id, key, "hmac:op1", producer=_NoProducer())  # type: ignore[arg-type]


def episode(about: str = "checkout") -> dict[str, object]:
    return {"episodeId": str(uuid.uuid4()), "about": about, "content": "E142 seen", "occurredAt": 0}


def now_ms() -> int:
    return int(time.time() * 1000)
