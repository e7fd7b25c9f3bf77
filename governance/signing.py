"""Signing envelopes: the signature covers the Avro single-object bytes with an empty signature.

Two schemes, one interface: a claw's HMAC-SHA256 deployment key (``hmac:<secret id>``) or a
registered Ed25519 key (``ed25519:<name>``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from contracts.avro import (
    ContractError,
    Decoded,
    decode_record,
    encode_record,
    envelope_from_decoded,
    signing_bytes,
    writer_schema,
)
from contracts.header_bytes import signed_bytes
from contracts.models import Envelope
from governance.identity import Verifier, hmac_sign
from governance.keyring import ED25519_PREFIX, key_proof_message


class Signer(Protocol):
    @property
    def key_id(self) -> str: ...

    def sign(self, message: bytes) -> bytes: ...


@dataclass(frozen=True)
class HmacSigner:
    key_id: str
    key: bytes

    def sign(self, message: bytes) -> bytes:
        return hmac_sign(self.key, message)


@dataclass(frozen=True)
class Ed25519Signer:
    key_id: str
    private_key: Ed25519PrivateKey

    @classmethod
    def generate(cls, name: str) -> Ed25519Signer:
        return cls(ED25519_PREFIX + name, Ed25519PrivateKey.generate())

    @property
    def public_key(self) -> bytes:
        return self.private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)

    def sign(self, message: bytes) -> bytes:
        return self.private_key.sign(message)

    def proof(self, tenant: str, claw_id: str) -> bytes:
        """Proof of possession for registering this key to ``claw_id``."""
        return self.sign(key_proof_message(tenant, claw_id, self.key_id, self.public_key))


def sign_envelope(env: Envelope, signer: Signer) -> Envelope:
    keyed = env.model_copy(update={"key_id": signer.key_id})
    return keyed.model_copy(update={"signature": signer.sign(signing_bytes(writer_schema(keyed), keyed.to_wire()))})


def encode_signed(env: Envelope, signer: Signer) -> bytes:
    """``encode_envelope(sign_envelope(env, signer))``, from one wire dict: no model copies and no
    second dump (the governance processor signs two envelopes per decision)."""
    writer = writer_schema(env)
    wire = {**env.to_wire(), "keyId": signer.key_id}
    wire["signature"] = signer.sign(signing_bytes(writer, wire))
    return encode_record(writer, wire)


SYSTEM_CLAW = "hivemem-governance"  # the claw id HiveMem's governance processor writes as


def verify_system_output(data: bytes, verifier: Verifier, decoded: tuple[Decoded, Envelope] | None = None) -> Envelope:
    """Decode a decision or fact and check that HiveMem's processor signed it: these topics
    bypass the gate, so a record written there by anyone else must not become shared truth.
    ``decoded``: ``data`` as the caller decoded it already (read models decode each record once)."""
    if decoded is None:
        record = decode_record(data)
        decoded = record, envelope_from_decoded(record)
    record, env = decoded
    decoded_writer = record.writer
    # Cut from the received bytes, as the gate does (equal to the definition for canonical bytes).
    signed = signed_bytes(data, decoded_writer) or signing_bytes(decoded_writer, record.writer_record)
    if env.claw_id != SYSTEM_CLAW or not verifier.verify(signed, env.signature):
        raise ContractError("UNVERIFIED_OUTPUT", f"{env.type} {env.event_id} is not signed by {SYSTEM_CLAW}")
    return env
