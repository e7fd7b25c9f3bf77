"""The envelope header read straight from the received bytes: its fields and the signed bytes.

Every envelope schema starts with primitive header fields (ints, longs, strings) before
``signature``; their places in the bytes are found by walking varints and lengths, with no
decoding of the payload and no model validation. Two uses on hot paths:

- ``signed_bytes``: what a signature covers (``avro.signing_bytes`` defines it: the single-object
  encoding with ``signature`` set to empty bytes), cut from the record instead of re-encoded.
  Re-encoding the decoded record cost the gate more than the HMAC itself. The cut equals the
  re-encoding whenever the received bytes are the canonical encoding (what every conforming
  writer produces). For a non-canonical encoding (over-long varints) the cut keeps the sender's
  bytes, which no signer signed: such a record fails verification. Stricter, never looser.
- ``read_header``: the header fields of a record the gate already accepted (the audit read model
  needs nothing else), an order of magnitude cheaper than decoding and validating the envelope.

Both return None when the schema or the bytes do not allow it; the caller then decodes in full.
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.avro import HEADER_LEN, MAGIC, SchemaVersion, registry

_VARINT = ("int", "long", "boolean")  # zigzag varints (a boolean is one byte, < 0x80: same walk)
_SIZED = ("string", "bytes")  # a varint length, then that many bytes
Plan = tuple[tuple[str, str], ...]  # (name, kind) of each field before ``signature``


def _plan(writer: SchemaVersion) -> Plan | None:
    fields: list[tuple[str, str]] = []
    for f in writer.raw.get("fields", []):
        kind = f["type"] if isinstance(f["type"], str) else ""
        if f["name"] == "signature":
            return tuple(fields) if kind == "bytes" else None
        if kind not in _VARINT and kind not in _SIZED:
            return None
        fields.append((str(f["name"]), kind))
    return None


_PLANS: dict[bytes, Plan | None] = {}


def plan_of(writer: SchemaVersion) -> Plan | None:
    """The header fields before ``signature``, or None if one is not a plain primitive."""
    if writer.fingerprint not in _PLANS:
        _PLANS[writer.fingerprint] = _plan(writer)
    return _PLANS[writer.fingerprint]


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """(zigzag-decoded value, position after it); IndexError if it runs past the end, ValueError if too long."""
    b = data[pos]
    if b < 0x80:  # the usual one-byte varint
        return (b >> 1) ^ -(b & 1), pos + 1
    shift = result = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _walk(data: bytes, plan: Plan, keep: bool) -> tuple[dict[str, int | str], int, int] | None:
    """(header values if ``keep``, start of the signature field, end of it)."""
    values: dict[str, int | str] = {}
    try:
        pos = HEADER_LEN
        for name, kind in plan:
            value, pos = read_varint(data, pos)
            if kind in _SIZED:
                if value < 0 or pos + value > len(data):
                    return None
                if keep:
                    values[name] = data[pos : pos + value].decode()
                pos += value
            elif keep:
                values[name] = value
        start = pos
        size, pos = read_varint(data, pos)
        if size < 0 or pos + size > len(data):
            return None
    except (IndexError, ValueError):  # UnicodeDecodeError is a ValueError
        return None
    return values, start, pos + size


def signed_bytes(data: bytes, writer: SchemaVersion) -> bytes | None:
    """``data`` with its signature field emptied."""
    plan = plan_of(writer)
    walked = None if plan is None else _walk(data, plan, keep=False)
    if walked is None:
        return None
    _, start, end = walked
    return data[:start] + b"\x00" + data[end:]


@dataclass(frozen=True)
class EnvelopeHeader:
    type: str
    event_id: str
    trace_id: str
    timestamp: int
    idempotency_key: str
    claw_id: str
    instance_id: str
    tenant: str


def read_header(data: bytes) -> EnvelopeHeader | None:
    """The header of a single-object encoded envelope, as written (no validation: for records the
    gate accepted)."""
    if len(data) < HEADER_LEN or data[:2] != MAGIC:
        return None
    writer = registry().by_fingerprint(data[2:HEADER_LEN])
    plan = None if writer is None else plan_of(writer)
    walked = None if plan is None else _walk(data, plan, keep=True)
    if walked is None:
        return None
    v = walked[0]
    try:
        return EnvelopeHeader(str(v["type"]), str(v["eventId"]), str(v["traceId"]), int(v["timestamp"]),
                              str(v["idempotencyKey"]), str(v["clawId"]), str(v["instanceId"]),
                              str(v["tenant"]))  # fmt: skip
    except KeyError:
        return None
