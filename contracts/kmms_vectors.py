"""A ``kmms_embedding`` record read with its vector as a float32 ``numpy`` array, for the read model's fold.

fastavro gives a vector as a list of 384 Python floats, which the fold then turns into an array again for its
binary COPY: a replay of the KMMS read model spent a third of its time there (35 us a record, most of them
building and dropping those floats). The Avro binary encoding of ``array<float>`` is a block count and then
the floats as little-endian IEEE 754 singles, so this reads the block straight into an array. It reads only
what the writer schema holds as ``string``, ``bytes`` and ``array<float>`` fields (every version of
``kmms_embedding`` so far); a writer schema with any other field type is read by fastavro (``decode_kmms``)
instead. The test
``tests/unit/test_kmms_vectors.py`` holds it equal to fastavro on random records of every version.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from contracts.avro import HEADER_LEN, MAGIC, ContractError, SchemaVersion, registry
from contracts.header_bytes import read_varint
from contracts.kmms_records import FAMILY, KmmsEmbedding, decode_kmms

_FIELDS = {"unitId": "unit_id", "clawId": "claw_id"}  # wire name -> attribute, where they differ
_LE_FLOAT = np.dtype("<f4")


@dataclass(frozen=True)
class VectorRecord:
    """A ``KmmsEmbedding`` whose vector is a float32 array."""

    unit_id: str
    tenant: str
    claw_id: str
    scope: str
    model: str
    vector: np.ndarray
    source: str
    voice: str = ""
    tokens: bytes = b""


_LAYOUTS: dict[bytes, tuple[tuple[str, str], ...] | None] = {}  # by writer fingerprint


def _layout(sv: SchemaVersion) -> tuple[tuple[str, str], ...] | None:
    if sv.fingerprint not in _LAYOUTS:
        _LAYOUTS[sv.fingerprint] = _fields(sv)
    return _LAYOUTS[sv.fingerprint]


def _fields(sv: SchemaVersion) -> tuple[tuple[str, str], ...] | None:
    """(attribute, 'string' | 'bytes' | 'floats') of each field, or None if a field has another type."""
    out: list[tuple[str, str]] = []
    for field in sv.parsed["fields"]:
        t = field["type"]
        if t in ("string", "bytes"):
            out.append((_FIELDS.get(field["name"], field["name"]), t))
        elif isinstance(t, dict) and t.get("type") == "array" and t.get("items") == "float":
            out.append((_FIELDS.get(field["name"], field["name"]), "floats"))
        else:
            return None
    return tuple(out)


def _floats(data: bytes, pos: int) -> tuple[np.ndarray, int]:
    parts: list[np.ndarray] = []
    while True:
        count, pos = read_varint(data, pos)
        if count == 0:
            break
        if count < 0:  # a block with its size in bytes first
            count = -count
            _, pos = read_varint(data, pos)
        end = pos + 4 * count
        if end > len(data):
            raise ContractError("MALFORMED", "Avro body does not decode: array runs past the end")
        parts.append(np.frombuffer(data, dtype=_LE_FLOAT, count=count, offset=pos))
        pos = end
    vector = parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.empty(0, dtype=_LE_FLOAT)
    return vector.astype(np.float32, copy=False), pos


def decode_vector_record(data: bytes) -> VectorRecord:
    """The record in ``data`` (single-object encoded ``kmms_embedding``), its vector as an array."""
    if len(data) < HEADER_LEN or data[:2] != MAGIC:
        raise ContractError("MALFORMED", "not Avro single-object encoded (bad magic or too short)")
    sv = registry().by_fingerprint(data[2:HEADER_LEN])
    if sv is None or sv.family != FAMILY[KmmsEmbedding]:
        return _slow(data)  # raises UNKNOWN_SCHEMA or TYPE_MISMATCH as the contract reader does
    layout = _layout(sv)
    if layout is None:
        return _slow(data)
    values: dict[str, Any] = {}
    pos = HEADER_LEN
    try:
        for name, kind in layout:
            if kind == "floats":
                values[name], pos = _floats(data, pos)
                continue
            size, pos = read_varint(data, pos)
            if size < 0 or pos + size > len(data):
                raise ContractError("MALFORMED", f"Avro body does not decode: {kind} runs past the end")
            raw = data[pos : pos + size]
            values[name] = raw.decode() if kind == "string" else bytes(raw)
            pos += size
    except ContractError:
        raise
    except (IndexError, ValueError) as exc:  # past the end, a varint too long, not UTF-8 (a ValueError)
        raise ContractError("MALFORMED", f"Avro body does not decode: {type(exc).__name__}") from exc
    if pos != len(data):
        raise ContractError("MALFORMED", "trailing bytes after the Avro body")
    return VectorRecord(**values)


def _slow(data: bytes) -> VectorRecord:
    e = decode_kmms(data, KmmsEmbedding)
    return VectorRecord(e.unit_id, e.tenant, e.claw_id, e.scope, e.model, np.asarray(e.vector, dtype=np.float32),
                        e.source, e.voice, e.tokens)  # fmt: skip
