"""Claw identity: operator secrets, derived deployment keys, signatures (seed 000, 13.2).

An operator (tenant) keeps HMAC-SHA256 secrets, each with an id. A claw's deployment key is
derived from one of them, so the gate can verify any claw of the tenant without storing
per-claw secrets. ``keyId`` on the envelope names the scheme and the secret: ``hmac:<id>``.
Claws may also sign with registered Ed25519 keys (``keyring.py``); the gate resolves both.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol

HMAC_PREFIX = "hmac:"


@lru_cache(maxsize=65536)  # the gate derives one per envelope: cached, it is a dict probe
def derive_deployment_key(operator_secret: bytes, tenant: str, claw_id: str) -> bytes:
    """Deployment key of one claw: HMAC-SHA256(operator secret, tenant/claw)."""
    info = f"hivemem/deployment/v1/{tenant}/{claw_id}".encode()
    return hmac.new(operator_secret, info, hashlib.sha256).digest()


def hmac_sign(key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hashlib.sha256).digest()


class Verifier(Protocol):
    def verify(self, message: bytes, signature: bytes) -> bool: ...


@dataclass(frozen=True)
class HmacVerifier:
    key: bytes

    def verify(self, message: bytes, signature: bytes) -> bool:
        return hmac.compare_digest(hmac_sign(self.key, message), signature)


@dataclass(frozen=True)
class TenantPolicy:
    """What the gate knows of one tenant (loaded from settings)."""

    name: str
    operator_secrets: Mapping[str, bytes]  # secret id -> secret
    governance_enabled: bool = True
    suspended_claws: frozenset[str] = field(default_factory=frozenset)
    caml_tier: str = "pro"  # CAML write quota: free 20/h, pro 1,000/h, enterprise 100,000/h
    memory_pii: str = "redact"  # KMMS episodes with personal data: "redact" (kept with [EMAIL]...) or "reject"


@dataclass(frozen=True)
class KeyRefusal:
    code: str  # UNKNOWN_KEY | KEY_REVOKED | KEY_ROTATED | ...
    detail: str


class KeyResolver(Protocol):
    def resolve(
        self, tenant: str, claw_id: str, key_id: str, signed_at: int, seen_at: int
    ) -> Verifier | KeyRefusal | None:
        """A verifier for the key, None if unknown, or why the key may not sign this record.

        ``signed_at`` is the envelope's timestamp, ``seen_at`` the broker's log time.
        """
        ...


@dataclass(frozen=True)
class DeploymentKeys:
    """Resolves ``hmac:<secret id>`` keys from the tenants' operator secrets."""

    tenants: Mapping[str, TenantPolicy]

    def resolve(self, tenant: str, claw_id: str, key_id: str, signed_at: int = 0, seen_at: int = 0) -> Verifier | None:
        policy = self.tenants.get(tenant)
        if policy is None or not key_id.startswith(HMAC_PREFIX):
            return None
        secret = policy.operator_secrets.get(key_id[len(HMAC_PREFIX) :])
        if secret is None:
            return None
        return HmacVerifier(derive_deployment_key(secret, tenant, claw_id))
