"""A stranger publishes from the docs alone.

The publisher below follows docs/wire-protocol.md literally and imports nothing from HiveMem:
the schemas are read from contracts/schemas/<type>/v<N>.avsc with json + fastavro, the
fingerprint is computed here (CRC-64-AVRO), keys are derived and records signed with hashlib,
hmac and cryptography, and records go out with confluent-kafka. HiveMem is used only to check
the verdicts (the audit read model).
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import re
import struct
import time
import tomllib
import uuid
import zlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import fastavro
import pytest
from confluent_kafka import KafkaError, Message, Producer
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from fastavro.schema import to_parsing_canonical_form

from hivemem.stack import Stack
from tests.conftest import wait_until
from tests.integration.support import owner_db

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "contracts" / "schemas"
DOC = REPO / "docs" / "wire-protocol.md"

# ---------------------------------------------------------------- the publisher (docs only)

PREFIX = "hivemem."  # "Topics": the default prefix
PARTITIONS = 3
MAGIC = b"\xc3\x01"
CRC64_EMPTY = 0xC15D213AA4D7A795
MASK64 = (1 << 64) - 1


def _crc64_table() -> list[int]:
    table = []
    for i in range(256):
        fp = i
        for _ in range(8):
            fp = (fp >> 1) ^ (CRC64_EMPTY & -(fp & 1))
        table.append(fp & MASK64)
    return table


_TABLE = _crc64_table()


def crc64_avro(data: bytes) -> int:
    fp = CRC64_EMPTY
    for b in data:
        fp = (fp >> 8) ^ _TABLE[(fp ^ b) & 0xFF]
    return fp


@dataclass(frozen=True)
class WriterSchema:
    type: str
    version: int
    parsed: Any
    fingerprint: bytes  # wire bytes: CRC-64-AVRO of the Parsing Canonical Form, little-endian


@cache
def writer_schema(envelope_type: str) -> WriterSchema:
    """The latest contracts/schemas/<type>/v<N>.avsc."""
    files = {int(p.stem[1:]): p for p in (SCHEMAS / envelope_type).glob("v*.avsc")}
    version = max(files)
    parsed = fastavro.parse_schema(json.loads(files[version].read_text()), named_schemas={})
    canonical = to_parsing_canonical_form(parsed)
    return WriterSchema(envelope_type, version, parsed, struct.pack("<Q", crc64_avro(canonical.encode())))


def single_object(schema: WriterSchema, record: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, schema.parsed, record)
    return MAGIC + schema.fingerprint + buf.getvalue()


def deployment_key(operator_secret_hex: str, tenant: str, claw_id: str) -> bytes:
    message = f"hivemem/deployment/v1/{tenant}/{claw_id}".encode()
    return hmac.new(bytes.fromhex(operator_secret_hex), message, hashlib.sha256).digest()


def key_proof_message(tenant: str, claw_id: str, key_id: str, public_key: bytes) -> bytes:
    return b"\x00".join([b"hivemem/key-proof/v1", tenant.encode(), claw_id.encode(), key_id.encode(), public_key])


@dataclass(frozen=True)
class HmacKey:
    key_id: str  # hmac:<secret id>
    key: bytes

    def sign(self, data: bytes) -> bytes:
        return hmac.new(self.key, data, hashlib.sha256).digest()


@dataclass(frozen=True)
class Ed25519Key:
    key_id: str  # ed25519:<name>
    private: Ed25519PrivateKey

    @property
    def public_key(self) -> bytes:
        return self.private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)

    def sign(self, data: bytes) -> bytes:
        return self.private.sign(data)


Key = HmacKey | Ed25519Key


def aggregate(envelope_type: str, payload: dict[str, Any], claw_id: str) -> str:
    """The aggregate part of the message key <tenant>/<aggregate> ("Message keys")."""
    if envelope_type in ("proposal", "vote"):
        return f"proposal:{payload['proposalId']}"
    if envelope_type in ("observation", "validation"):
        return f"observation:{payload['observationId']}"
    if envelope_type in ("episode", "trace"):
        return f"about:{payload['about']}"
    return f"claw:{claw_id}"  # presence, capabilities, identity


@dataclass(frozen=True)
class Outgoing:
    topic: str
    partition: int
    key: bytes
    value: bytes


def envelope(envelope_type: str, payload: dict[str, Any], *, tenant: str, claw_id: str, key: Key,
             trace_id: str) -> Outgoing:  # fmt: skip
    schema = writer_schema(envelope_type)
    event_id = str(uuid.uuid4())
    record = {
        "schemaVersion": schema.version,
        "type": envelope_type,
        "eventId": event_id,
        "traceId": trace_id,
        "timestamp": int(time.time() * 1000),
        "idempotencyKey": f"{claw_id}/{event_id}",
        "clawId": claw_id,
        "instanceId": f"{claw_id}-1",
        "tenant": tenant,
        "keyId": key.key_id,
        "signature": b"",
        "payload": payload,
    }
    signed_bytes = single_object(schema, record)
    value = single_object(schema, {**record, "signature": key.sign(signed_bytes)})
    message_key = f"{tenant}/{aggregate(envelope_type, payload, claw_id)}".encode()
    return Outgoing(PREFIX + envelope_type, zlib.crc32(message_key) % PARTITIONS, message_key, value)


class Publisher:
    def __init__(self, bootstrap: str) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})

    def send(self, records: list[Outgoing]) -> list[tuple[str, int, int]]:
        """Produce and wait; the (topic, partition, offset) where each record landed."""
        landed: dict[int, tuple[str, int, int] | str] = {}
        for i, rec in enumerate(records):

            def report(err: KafkaError | None, msg: Message, i: int = i) -> None:
                landed[i] = str(err) if err else (str(msg.topic()), int(msg.partition() or 0), int(msg.offset() or 0))

            self.producer.produce(rec.topic, value=rec.value, key=rec.key, partition=rec.partition, on_delivery=report)
        assert self.producer.flush(30) == 0, "records still queued after 30 s"
        out = [landed[i] for i in range(len(records))]
        assert all(isinstance(x, tuple) for x in out), out
        return [x for x in out if isinstance(x, tuple)]


# ---------------------------------------------------------------- checking (HiveMem's read model)


def verdicts(stack: Stack, positions: list[tuple[str, int, int]]) -> list[str]:
    """The audit verdict (ACCEPTED or the reason code) of each inbound record, once all exist."""

    def read() -> list[str] | None:
        out = []
        with owner_db(stack) as conn:
            for topic, partition, offset in positions:
                row = conn.execute("SELECT coalesce(reason_code, outcome) FROM audit.events WHERE source_topic = %s "
                                   "AND source_partition = %s AND source_offset = %s",
                                   (topic, partition, offset)).fetchone()  # fmt: skip
                if row is None:
                    return None
                out.append(str(row[0]))
        return out

    result: list[str] = wait_until(read, timeout=90, what="the gate's verdicts in audit.events")
    return result


def operator_secret(stack: Stack, tenant: str) -> tuple[str, str]:
    """(secret id, hex secret) from the operator's tenants.toml."""
    doc = tomllib.loads(stack.settings.config_path.read_text())
    secret_id, secret_hex = next(iter(doc["tenants"][tenant]["operator_secrets"].items()))
    return secret_id, secret_hex


# ---------------------------------------------------------------- tests


def test_docs_worked_example_is_reproduced_by_the_independent_publisher() -> None:
    text = DOC.read_text()
    blocks = dict(re.findall(r"<!-- wire-example: ([a-z-]+) -->\s*\n```[a-z]*\n(.*?)\n```", text, re.S))

    def hex_block(name: str) -> bytes:
        heads = (re.split(r"\s{2,}", line.strip())[0] for line in blocks[name].splitlines())
        return bytes.fromhex("".join(h.replace(" ", "") for h in heads if re.fullmatch(r"[0-9a-f ]+", h)))

    record = json.loads(blocks["record"])
    schema = writer_schema(record["type"])
    assert schema.version == record["schemaVersion"]
    assert schema.fingerprint == hex_block("fingerprint")
    assert to_parsing_canonical_form(schema.parsed) == blocks["canonical-form"]
    key = HmacKey(record["keyId"], deployment_key(blocks["operator-secret"], record["tenant"], record["clawId"]))
    assert key.key == hex_block("deployment-key")
    signed_bytes = single_object(schema, {**record, "signature": b""})
    assert signed_bytes == hex_block("signed-bytes")
    assert key.sign(signed_bytes) == hex_block("signature")
    assert single_object(schema, {**record, "signature": key.sign(signed_bytes)}) == hex_block("record-value")
    message_key = f"{record['tenant']}/{aggregate(record['type'], record['payload'], record['clawId'])}"
    assert message_key == blocks["message-key"]


def test_every_claw_type_published_from_the_docs_is_accepted(stack: Stack) -> None:
    tenant = "acme"
    claw = f"stranger-{uuid.uuid4().hex[:8]}"
    trace = f"wire-{uuid.uuid4()}"
    secret_id, secret_hex = operator_secret(stack, tenant)
    hmac_key = HmacKey(f"hmac:{secret_id}", deployment_key(secret_hex, tenant, claw))
    ed_key = Ed25519Key(f"ed25519:{claw}-k1", Ed25519PrivateKey.generate())
    publisher = Publisher(stack.settings.require_kafka())

    def env(envelope_type: str, payload: dict[str, Any], key: Key = hmac_key) -> Outgoing:
        return envelope(envelope_type, payload, tenant=tenant, claw_id=claw, key=key, trace_id=trace)

    def register(new: Ed25519Key, replaces: str | None, signer: Key) -> Outgoing:
        proof = new.sign(key_proof_message(tenant, claw, new.key_id, new.public_key))
        return env("identity", {"action": "REGISTER", "keyId": new.key_id, "publicKey": new.public_key,
                                "proof": proof, "replaces": replaces}, key=signer)  # fmt: skip

    proposal_id, observation_id = f"p-{uuid.uuid4()}", f"o-{uuid.uuid4()}"
    now = int(time.time() * 1000)
    first = {
        "presence": env("presence", {"status": "ACTIVE", "healthy": True, "ttlSeconds": 30, "agentVersion": "w/1"}),
        "capabilities": env("capabilities", {"capabilities": ["logs.read:/var/log/app/*"]}),
        "proposal": env(
            "proposal",
            {
                "proposalId": proposal_id,
                "factKey": f"wire/{proposal_id}",
                "statement": "A stranger can publish from the docs",
                "tags": ["docs"],
                "proposer": claw,
                "deadline": now + 600_000,
                "baseVersion": 0,
            },
        ),
        "vote": env("vote", {"proposalId": proposal_id, "vote": "YES", "reason": None}),
        "observation": env(
            "observation",
            {
                "observationId": observation_id,
                "observationType": "WORKFLOW",
                "domain": "technology",
                "summary": "docs suffice",
                "pattern": "{}",
                "evidenceCount": 1,
                "confidence": 0.9,
            },
        ),
        "validation": env("validation", {"observationId": observation_id, "verdict": "CONFIRMED", "note": "ok"}),
        "episode": env(
            "episode",
            {
                "episodeId": f"e-{uuid.uuid4()}",
                "about": "wire-protocol",
                "dimensions": {"lang": "any"},
                "content": "published from the docs",
                "occurredAt": now,
            },
        ),
        "trace": env(
            "trace",
            {
                "traceRecordId": f"t-{uuid.uuid4()}",
                "about": "wire-protocol",
                "situation": "s",
                "task": "t",
                "action": "a",
                "result": "r",
                "outcome": "SUCCESS",
            },
        ),
        "identity REGISTER (deployment key)": register(ed_key, None, hmac_key),
    }
    got = verdicts(stack, publisher.send(list(first.values())))
    assert dict(zip(first, got, strict=True)) == dict.fromkeys(first, "ACCEPTED")

    # The registration's verdict is visible, so the gate knows the key: sign with it.
    signed_ed = env("episode", {"episodeId": f"e-{uuid.uuid4()}", "about": "wire-protocol", "dimensions": {},
                                "content": "signed with a registered Ed25519 key", "occurredAt": now},
                    key=ed_key)  # fmt: skip
    assert verdicts(stack, publisher.send([signed_ed])) == ["ACCEPTED"]

    # Rotation (signed by the old key), then the new key signs, then the deployment key revokes it.
    ed_key2 = Ed25519Key(f"ed25519:{claw}-k2", Ed25519PrivateKey.generate())
    assert verdicts(stack, publisher.send([register(ed_key2, ed_key.key_id, ed_key)])) == ["ACCEPTED"]
    caps = {"capabilities": ["logs.read:/var/log/app/*", "metrics.read"]}
    assert verdicts(stack, publisher.send([env("capabilities", caps, key=ed_key2)])) == ["ACCEPTED"]
    old_key_after_rotation = env("capabilities", caps, key=ed_key)
    revoke = env("identity", {"action": "REVOKE", "keyId": ed_key2.key_id, "publicKey": b"", "proof": b"",
                              "replaces": None})  # fmt: skip
    assert verdicts(stack, publisher.send([old_key_after_rotation, revoke])) == ["KEY_ROTATED", "ACCEPTED"]
    assert verdicts(stack, publisher.send([env("capabilities", caps, key=ed_key2)])) == ["KEY_REVOKED"]
