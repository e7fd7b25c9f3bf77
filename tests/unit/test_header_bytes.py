"""The signed bytes cut from a received record equal the re-encoded definition (avro.signing_bytes)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from fastavro.utils import generate_one

import contracts
from contracts.avro import HEADER_LEN, SchemaVersion, encode_record, registry, signing_bytes
from contracts.header_bytes import plan_of, read_header, signed_bytes

FAMILIES = sorted(p.parent.name for p in (Path(contracts.__file__).parent / "schemas").glob("*/v1.avsc"))
SIGNED = [sv for fam in FAMILIES for sv in registry().versions(fam)
          if any(f["name"] == "signature" for f in sv.raw.get("fields", []))]  # fmt: skip


def test_every_signed_schema_allows_the_cut() -> None:
    assert len(SIGNED) >= 10
    assert [sv.family for sv in SIGNED if plan_of(sv) is None] == []


@pytest.mark.parametrize("sv", SIGNED, ids=lambda sv: f"{sv.family}-v{sv.version}")
def test_cut_equals_reencoding(sv: SchemaVersion) -> None:
    random.seed(sv.version)
    for _ in range(20):
        rec = generate_one(sv.parsed)
        data = encode_record(sv, rec)
        assert signed_bytes(data, sv) == signing_bytes(sv, rec)


def test_truncated_or_non_canonical_bytes_never_match() -> None:
    sv = SIGNED[0]
    rec = {**generate_one(sv.parsed), "schemaVersion": sv.version}
    data = encode_record(sv, rec)
    assert signed_bytes(data[: HEADER_LEN + 1], sv) is None
    # schemaVersion (the first field) written as an over-long two-byte varint: decodes the same,
    # but the cut keeps those bytes, which no signer produced.
    first = data[HEADER_LEN]
    assert first < 0x80
    padded = data[:HEADER_LEN] + bytes([first | 0x80, 0x00]) + data[HEADER_LEN + 1 :]
    cut = signed_bytes(padded, sv)
    assert cut is not None and cut != signing_bytes(sv, rec)


@pytest.mark.parametrize("sv", SIGNED, ids=lambda sv: f"{sv.family}-v{sv.version}")
def test_header_read_from_bytes_equals_the_decoded_record(sv: SchemaVersion) -> None:
    for _ in range(10):
        rec = generate_one(sv.parsed)
        h = read_header(encode_record(sv, rec))
        assert h is not None
        assert (h.type, h.event_id, h.trace_id, h.timestamp, h.idempotency_key, h.claw_id, h.instance_id,
                h.tenant) == (rec["type"], rec["eventId"], rec["traceId"], rec["timestamp"], rec["idempotencyKey"],
                              rec["clawId"], rec["instanceId"], rec["tenant"])  # fmt: skip


def test_header_of_garbage_is_none() -> None:
    sv = SIGNED[0]
    data = encode_record(sv, generate_one(sv.parsed))
    assert read_header(b"") is None
    assert read_header(b"\x00" + data[1:]) is None  # bad magic
    assert read_header(data[:2] + b"\xff" * 8 + data[HEADER_LEN:]) is None  # unknown fingerprint
    assert read_header(data[: HEADER_LEN + 3]) is None  # cut short
