"""docs/wire-protocol.md cannot rot: its worked example and fingerprint table are checked
against HiveMem's own encoder, signer and gate."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path
from typing import Any

from fastavro.schema import to_parsing_canonical_form

from contracts.avro import decode_envelope, decode_record, encode_envelope, registry, signing_bytes
from contracts.models import Envelope
from contracts.topics import DEFAULT_PARTITIONS, ENVELOPE_TYPES, TopicNames, partition_key
from governance.gate.checks import GateConfig
from governance.identity import DeploymentKeys, TenantPolicy, derive_deployment_key
from governance.signing import HmacSigner, encode_signed, sign_envelope
from processors.gate.core import GateDriver

DOC = Path(__file__).resolve().parents[2] / "docs" / "wire-protocol.md"
_BLOCK = re.compile(r"<!-- wire-example: ([a-z-]+) -->\s*\n```[a-z]*\n(.*?)\n```", re.S)


def blocks() -> dict[str, str]:
    found: dict[str, str] = {}
    for name, body in _BLOCK.findall(DOC.read_text()):
        assert name not in found, f"two blocks named {name}"
        found[name] = body
    return found


def hex_of(block: str) -> bytes:
    """The bytes of a hex block. A line holds hex groups, optionally followed by two or more
    spaces and a comment; an indented line that is not hex is a comment of its own."""
    out = []
    for line in block.splitlines():
        head = re.split(r"\s{2,}", line.strip())[0]
        if re.fullmatch(r"[0-9a-f]+( [0-9a-f]+)*", head):
            out.append(head.replace(" ", ""))
        else:
            assert line[:1].isspace() or not line, f"not hex: {line!r}"
    return bytes.fromhex("".join(out))


def text_of(block: str) -> str:
    (line,) = block.splitlines()
    return line


def example() -> dict[str, Any]:
    b = blocks()
    assert set(b) == {"operator-secret", "record", "canonical-form", "fingerprint", "derivation-message",
                      "deployment-key", "signed-bytes", "signature", "record-value", "message-key"}  # fmt: skip
    return {
        "secret": bytes.fromhex(text_of(b["operator-secret"])),
        "record": json.loads(b["record"]),
        "pcf": text_of(b["canonical-form"]),
        "fingerprint": hex_of(b["fingerprint"]),
        "message": text_of(b["derivation-message"]),
        "deployment_key": hex_of(b["deployment-key"]),
        "signed": hex_of(b["signed-bytes"]),
        "signature": hex_of(b["signature"]),
        "value": hex_of(b["record-value"]),
        "key": text_of(b["message-key"]).encode(),
    }


def unsigned_envelope(record: dict[str, Any]) -> Envelope:
    assert record["signature"] == ""
    return Envelope.model_validate({**record, "signature": b""})


def test_schema_fingerprint_and_canonical_form() -> None:
    ex = example()
    env = unsigned_envelope(ex["record"])
    sv = registry().latest(env.type)
    assert sv.version == env.schema_version
    assert to_parsing_canonical_form(sv.parsed) == ex["pcf"]
    assert sv.fingerprint == ex["fingerprint"]
    stated = re.search(r"fingerprint is `0x([0-9a-f]{16})`", DOC.read_text())
    assert stated is not None and int(stated.group(1), 16).to_bytes(8, "little") == sv.fingerprint


def test_deployment_key_signature_and_record_bytes() -> None:
    ex = example()
    env = unsigned_envelope(ex["record"])
    assert ex["message"] == f"hivemem/deployment/v1/{env.tenant}/{env.claw_id}"
    key = derive_deployment_key(ex["secret"], env.tenant, env.claw_id)
    assert key == ex["deployment_key"]
    assert encode_envelope(env) == ex["signed"]
    signer = HmacSigner(env.key_id, key)
    assert signer.sign(ex["signed"]) == ex["signature"]
    signed = sign_envelope(env, signer)
    assert signed.signature == ex["signature"]
    assert encode_envelope(signed) == ex["value"]
    assert encode_signed(env, signer) == ex["value"]  # the governance processor's one-pass encoding
    decoded = decode_record(ex["value"])
    assert signing_bytes(decoded.writer, decoded.writer_record) == ex["signed"]  # what the gate verifies
    assert decode_envelope(ex["value"]) == signed
    text = DOC.read_text()
    assert f"The signed bytes ({len(ex['signed'])} bytes)" in text
    assert f"The record value ({len(ex['value'])} bytes)" in text


def test_message_key_topic_partition_and_the_gate_accepts_it() -> None:
    ex = example()
    env = unsigned_envelope(ex["record"])
    assert partition_key(env.tenant, env.aggregate) == ex["key"]
    topic = TopicNames().inbound(env.type)
    text = DOC.read_text()
    assert f"It goes to topic `{topic}`" in text
    assert f"`crc32(key) mod 3` = {zlib.crc32(ex['key']) % DEFAULT_PARTITIONS}" in text
    secret_id = env.key_id.removeprefix("hmac:")
    tenants = {env.tenant: TenantPolicy(env.tenant, {secret_id: ex["secret"]})}
    driver = GateDriver(GateConfig(topics=TopicNames(), tenants=tenants, keys=DeploymentKeys(tenants)))
    out = driver.pipe(topic, ex["key"], ex["value"], log_time=env.timestamp + 1_000)
    assert (out.topic, out.value, out.key) == (TopicNames().accepted(env.type), ex["value"], ex["key"])


def test_fingerprint_table_lists_every_envelope_schema_version() -> None:
    table = DOC.read_text().split("<!-- wire-fingerprints -->", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^\| `([a-z_]+)` \| (\d+) \| `contracts/schemas/\1/v\2\.avsc` \| `([0-9a-f]{16})` \|$", table,
                      re.M)  # fmt: skip
    listed = {(family, int(version)): fp for family, version, fp in rows}
    reg = registry()
    envelopes = [f for f in reg.families() if f in ENVELOPE_TYPES]  # not rejected, not CAML's internal records
    expected = {(f, v.version): v.fingerprint.hex() for f in envelopes for v in reg.versions(f)}
    assert listed == expected
