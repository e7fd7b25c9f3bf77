"""The bytes a signature covers, cut from the record as received instead of re-encoded.

``avro.signing_bytes`` defines them: the single-object encoding with ``signature`` set to empty
bytes. Every envelope schema starts with primitive header fields (ints, longs, strings) before
``signature``, so its place in the received bytes is found by skipping those fields' varints and
lengths; the signed bytes are then the record with that one field's bytes replaced by a zero
length. Re-encoding the decoded record (what the gate did before) cost more than the HMAC itself.

The cut equals the re-encoding whenever the received bytes are the canonical encoding (what every
conforming writer produces). For a non-canonical encoding (over-long varints) the cut keeps the
sender's bytes, which no signer signed: such a record fails verification. That is stricter than
re-encoding, never looser.
"""

from __future__ import annotations

from contracts.avro import HEADER_LEN, SchemaVersion

_VARINT = ("int", "long", "boolean")  # zigzag varints (a boolean is one byte, < 0x80: same skip)
_SIZED = ("string", "bytes")  # a varint length, then that many bytes


def _plan(writer: SchemaVersion) -> tuple[str, ...] | None:
    """The kinds of the fields before ``signature``, or None if one is not a plain primitive."""
    kinds: list[str] = []
    for f in writer.raw.get("fields", []):
        kind = f["type"] if isinstance(f["type"], str) else ""
        if f["name"] == "signature":
            return tuple(kinds) if kind == "bytes" else None
        if kind not in _VARINT and kind not in _SIZED:
            return None
        kinds.append(kind)
    return None


_PLANS: dict[bytes, tuple[str, ...] | None] = {}


def plan_of(writer: SchemaVersion) -> tuple[str, ...] | None:
    if writer.fingerprint not in _PLANS:
        _PLANS[writer.fingerprint] = _plan(writer)
    return _PLANS[writer.fingerprint]


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """(zigzag-decoded value, position after it)."""
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


def signed_bytes(data: bytes, writer: SchemaVersion) -> bytes | None:
    """``data`` with its signature field emptied; None when the schema or bytes do not allow the cut
    (the caller then re-encodes)."""
    plan = plan_of(writer)
    if plan is None:
        return None
    try:
        pos = HEADER_LEN
        for kind in plan:
            b = data[pos]
            if b < 0x80:  # the usual one-byte varint, inline
                value, pos = (b >> 1) ^ -(b & 1), pos + 1
            else:
                value, pos = _varint(data, pos)
            if kind in _SIZED:
                if value < 0:
                    return None
                pos += value
        start = pos
        size, pos = _varint(data, pos)
        if size < 0 or pos + size > len(data):
            return None
    except (IndexError, ValueError):
        return None
    return data[:start] + b"\x00" + data[pos + size :]
