"""Ed25519 claw keys through the gate: registration, rotation, revocation; HMAC alongside."""

from __future__ import annotations

from contracts.avro import decode_rejection, encode_envelope
from contracts.models import Envelope
from contracts.topics import TopicNames, partition_key
from governance.keyring import ClawKey
from governance.signing import Ed25519Signer, HmacSigner, encode_signed, sign_envelope
from processors.gate.core import GateDriver
from processors.gate.key_store import InMemoryKeyStore, KeyStore
from producers.claw_client import ClawClient
from streams.records import OutRecord
from tests.helpers import episode, gate_config, now_ms, offline_client

NAMES = TopicNames()


def pipe(d: GateDriver, env: Envelope, log_time: int | None = None) -> str:
    out = d.pipe(NAMES.inbound(env.type), partition_key(env.tenant, env.aggregate), encode_envelope(env),
                 env.timestamp if log_time is None else log_time)  # fmt: skip
    return code_of(out)


def code_of(out: OutRecord) -> str:
    return "ACCEPTED" if "accepted" in out.topic else decode_rejection(out.value).reason_code


def register(d: GateDriver, c: ClawClient, key: Ed25519Signer, t: int) -> str:
    replaces = c.key_id if isinstance(c.signer, Ed25519Signer) else None
    body = {"action": "REGISTER", "keyId": key.key_id, "publicKey": key.public_key,
            "proof": key.proof(c.tenant, c.claw_id), "replaces": replaces}  # fmt: skip
    return pipe(d, c.build("identity", body, timestamp_ms=t))


def test_registered_key_signs_and_hmac_still_works() -> None:
    d, c, t = GateDriver(gate_config()), offline_client(), now_ms()
    key = Ed25519Signer.generate("k1")
    signed_early = sign_envelope(c.build("episode", episode(), timestamp_ms=t), key)
    assert pipe(d, signed_early) == "UNKNOWN_KEY"  # not registered yet
    assert register(d, c, key, t) == "ACCEPTED"
    assert pipe(d, c.build("episode", episode(), timestamp_ms=t + 1)) == "ACCEPTED"  # HMAC, same gate
    c.use_key(key)
    env = c.build("episode", episode(), timestamp_ms=t + 2)
    assert env.key_id == "ed25519:k1" and pipe(d, env) == "ACCEPTED"
    forged = sign_envelope(c.build("episode", episode(), timestamp_ms=t + 3), Ed25519Signer("ed25519:k1",
                           Ed25519Signer.generate("x").private_key))  # fmt: skip
    assert pipe(d, forged) == "BAD_SIGNATURE"


def test_rotation_keeps_old_signatures_until_the_rotation() -> None:
    d, c, t = GateDriver(gate_config()), offline_client(), now_ms()
    k1, k2 = Ed25519Signer.generate("k1"), Ed25519Signer.generate("k2")
    register(d, c, k1, t)
    c.use_key(k1)
    before = c.build("episode", episode(), timestamp_ms=t + 10)  # signed by k1 before the rotation
    assert register(d, c, k2, t + 20) == "ACCEPTED"  # signed by k1, replaces k1
    after = c.build("episode", episode(), timestamp_ms=t + 30)  # still k1, after the rotation
    assert pipe(d, before, log_time=t + 40) == "ACCEPTED"
    assert pipe(d, after, log_time=t + 40) == "KEY_ROTATED"
    c.use_key(k2)
    assert pipe(d, c.build("episode", episode(), timestamp_ms=t + 50)) == "ACCEPTED"


def test_revoked_key_is_refused_from_the_revocation_on() -> None:
    d, c, t = GateDriver(gate_config()), offline_client(), now_ms()
    k1 = Ed25519Signer.generate("k1")
    register(d, c, k1, t)
    c.use_key(k1)
    early = c.build("episode", episode(), timestamp_ms=t + 1)
    revoke = sign_envelope(c.build("identity", {"action": "REVOKE", "keyId": k1.key_id}, timestamp_ms=t + 5),
                           offline_client().signer)  # fmt: skip
    assert pipe(d, revoke) == "ACCEPTED"
    assert pipe(d, early, log_time=t + 6) == "KEY_REVOKED"  # logged after the revocation
    assert register(d, offline_client(), k1, t + 7) == "KEY_CONFLICT"  # key ids are never reused


def test_only_the_deployment_key_revokes() -> None:
    d, c, t = GateDriver(gate_config()), offline_client(), now_ms()
    k1, k2 = Ed25519Signer.generate("k1"), Ed25519Signer.generate("k2")
    register(d, c, k1, t)
    c.use_key(k1)
    register(d, c, k2, t + 1)  # rotation: k2 replaces k1
    c.use_key(k2)
    stolen = c.build("identity", {"action": "REVOKE", "keyId": k1.key_id}, timestamp_ms=t + 2)
    assert pipe(d, stolen) == "KEY_NOT_AUTHORIZED"


def test_bad_registrations_have_reason_codes() -> None:
    d, c, t = GateDriver(gate_config()), offline_client(), now_ms()
    k1, k2 = Ed25519Signer.generate("k1"), Ed25519Signer.generate("k2")
    wrong_proof = {"action": "REGISTER", "keyId": k1.key_id, "publicKey": k1.public_key,
                   "proof": k2.proof("acme", "claw-1")}  # fmt: skip
    assert pipe(d, c.build("identity", wrong_proof, timestamp_ms=t)) == "BAD_KEY_PROOF"
    not_ed = {"action": "REGISTER", "keyId": "rsa:1", "publicKey": k1.public_key, "proof": b""}
    assert pipe(d, c.build("identity", not_ed, timestamp_ms=t)) == "INVALID_FIELD"
    unknown = {"action": "REVOKE", "keyId": "ed25519:nope"}
    assert pipe(d, c.build("identity", unknown, timestamp_ms=t)) == "UNKNOWN_KEY"
    register(d, c, k1, t)
    c.use_key(k1)
    # k1 may register only its own successor, not a side key.
    side = {"action": "REGISTER", "keyId": k2.key_id, "publicKey": k2.public_key, "proof": k2.proof("acme", "claw-1")}
    assert pipe(d, c.build("identity", side, timestamp_ms=t + 1)) == "KEY_NOT_AUTHORIZED"


def check_key_store_contract(store: KeyStore, claw: str) -> None:
    k = ClawKey("acme", claw, "ed25519:a", b"\x01" * 32, registered_at=10)
    assert store.get("acme", claw, "ed25519:a") is None
    store.put([k])
    assert store.get("acme", claw, "ed25519:a") == k
    revoked = ClawKey("acme", claw, "ed25519:a", b"\x01" * 32, registered_at=10, retired_at=15, revoked_at=20)
    store.put([revoked])
    assert store.get("acme", claw, "ed25519:a") == revoked
    assert store.get("globex", claw, "ed25519:a") is None


def test_in_memory_key_store() -> None:
    check_key_store_contract(InMemoryKeyStore(), "claw-1")


def test_one_pass_signing_gives_the_bytes_of_sign_then_encode() -> None:
    c = ClawClient("127.0.0.1:1", "acme", "claw-1", b"k" * 32, "hmac:op1")
    for signer in (HmacSigner("hmac:gov", b"g" * 32), Ed25519Signer.generate("gov")):
        for env in (c.build("episode", episode()), c.build("vote", {"proposalId": "p1", "vote": "NO"})):
            assert encode_signed(env, signer) == encode_envelope(sign_envelope(env, signer))
