"""Registered Ed25519 claw keys: registration, rotation, revocation, and when a key is usable.

A claw registers a key with an ``identity`` envelope signed by its operator-derived
deployment key (HMAC) or, for a rotation, by the key it replaces. The registration carries a
proof of possession: the new key's signature over ``key_proof_message``. Times are broker
log times, so every verdict is a function of the log:

- a key is usable for records the broker logged at or after its registration;
- a rotated-away key still verifies what was *signed* (envelope timestamp) before the
  rotation was logged, and nothing signed after it (KEY_ROTATED);
- a revoked key verifies nothing the broker logged from the revocation on (KEY_REVOKED).

Key ids are never reused by a claw, not even after revocation (KEY_CONFLICT).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from contracts.models import Envelope, IdentityPayload
from governance.identity import KeyRefusal, KeyResolver, Verifier

ED25519_PREFIX = "ed25519:"


def key_proof_message(tenant: str, claw_id: str, key_id: str, public_key: bytes) -> bytes:
    return b"\x00".join([b"hivemem/key-proof/v1", tenant.encode(), claw_id.encode(), key_id.encode(), public_key])


@dataclass(frozen=True)
class Ed25519Verifier:
    public_key: bytes

    def verify(self, message: bytes, signature: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(self.public_key).verify(signature, message)
        except (InvalidSignature, ValueError):
            return False
        return True


@dataclass(frozen=True)
class ClawKey:
    tenant: str
    claw_id: str
    key_id: str
    public_key: bytes
    registered_at: int  # log time of the registration
    retired_at: int | None = None  # log time of the rotation that replaced it
    revoked_at: int | None = None  # log time of the revocation


class KeyLookup(Protocol):
    def get(self, tenant: str, claw_id: str, key_id: str) -> ClawKey | None: ...


def usable(key: ClawKey, signed_at: int, seen_at: int) -> KeyRefusal | None:
    if seen_at < key.registered_at:
        return KeyRefusal("UNKNOWN_KEY", f"{key.key_id} was registered after this record")
    if key.revoked_at is not None and seen_at >= key.revoked_at:
        return KeyRefusal("KEY_REVOKED", f"{key.key_id} was revoked at {key.revoked_at}")
    if key.retired_at is not None and signed_at >= key.retired_at:
        return KeyRefusal("KEY_ROTATED", f"{key.key_id} was rotated out at {key.retired_at}; signed at {signed_at}")
    return None


def identity_changes(env: Envelope, seen_at: int, keys: KeyLookup) -> list[ClawKey] | KeyRefusal:
    """The key records an accepted ``identity`` envelope writes, or why it is refused.

    Applying the same record twice (a redelivery) yields no change the second time.
    """
    p = env.payload
    assert isinstance(p, IdentityPayload)
    if not p.key_id.startswith(ED25519_PREFIX) or len(p.key_id) == len(ED25519_PREFIX):
        return KeyRefusal("INVALID_FIELD", f"keyId must be '{ED25519_PREFIX}<name>'")
    existing = keys.get(env.tenant, env.claw_id, p.key_id)
    if p.action == "REVOKE":
        if env.key_id.startswith(ED25519_PREFIX):
            # The operator's word (the deployment key) revokes; a stolen claw key must not
            # be able to revoke its siblings.
            return KeyRefusal("KEY_NOT_AUTHORIZED", "a key is revoked with the deployment (hmac:) key")
        if existing is None:
            return KeyRefusal("UNKNOWN_KEY", f"{env.claw_id} has no key {p.key_id}")
        if existing.revoked_at is not None and existing.revoked_at <= seen_at:
            return []
        return [replace(existing, revoked_at=seen_at)]
    if len(p.public_key) != 32:
        return KeyRefusal("INVALID_FIELD", "publicKey must be a raw 32-byte Ed25519 key")
    if not Ed25519Verifier(p.public_key).verify(key_proof_message(env.tenant, env.claw_id, p.key_id, p.public_key),
                                                p.proof):  # fmt: skip
        return KeyRefusal("BAD_KEY_PROOF", "proof is not the new key's signature over its registration")
    if env.key_id.startswith(ED25519_PREFIX) and p.replaces != env.key_id:
        return KeyRefusal("KEY_NOT_AUTHORIZED", "an Ed25519 key may only register the key that replaces it")
    if existing is not None:
        if existing.public_key == p.public_key and existing.registered_at == seen_at:
            return []  # this very record, applied before
        return KeyRefusal("KEY_CONFLICT", f"{env.claw_id} already used key id {p.key_id}")
    changes = [ClawKey(env.tenant, env.claw_id, p.key_id, p.public_key, registered_at=seen_at)]
    if p.replaces is not None:
        old = keys.get(env.tenant, env.claw_id, p.replaces)
        if old is None:
            return KeyRefusal("UNKNOWN_KEY", f"{env.claw_id} has no key {p.replaces} to replace")
        if old.revoked_at is not None:
            return KeyRefusal("KEY_REVOKED", f"{p.replaces} is revoked; register with the deployment key instead")
        if old.retired_at is None:
            changes.append(replace(old, retired_at=seen_at))
    return changes


@dataclass(frozen=True)
class Keys:
    """Both schemes through one resolver: ``hmac:`` via ``base``, ``ed25519:`` via the registry."""

    base: KeyResolver
    registered: KeyLookup

    def resolve(
        self, tenant: str, claw_id: str, key_id: str, signed_at: int, seen_at: int
    ) -> Verifier | KeyRefusal | None:
        if not key_id.startswith(ED25519_PREFIX):
            return self.base.resolve(tenant, claw_id, key_id, signed_at, seen_at)
        key = self.registered.get(tenant, claw_id, key_id)
        if key is None:
            return None
        return usable(key, signed_at, seen_at) or Ed25519Verifier(key.public_key)
