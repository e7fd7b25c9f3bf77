"""Avro single-object encoding and the schema registry (fingerprint -> schema).

Wire format (Avro spec, "single object encoding"): ``0xC3 0x01``, the writer schema's
8-byte little-endian CRC-64-AVRO fingerprint, then the Avro binary body. Readers resolve
any known writer version to the latest version of the same family.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import fastavro
from fastavro.schema import fingerprint, to_parsing_canonical_form

from contracts.models import Envelope, Rejection

MAGIC = b"\xc3\x01"
HEADER_LEN = 10


class ContractError(ValueError):
    """A record that does not meet the contract; ``code`` is a stable reason code."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


@dataclass(frozen=True)
class SchemaVersion:
    family: str  # topic type, e.g. "proposal", or "rejected"
    version: int
    raw: dict[str, Any]
    parsed: Any
    fingerprint: bytes


class SchemaRegistry:
    """Every schema version kept in ``contracts/schemas/<family>/v<N>.avsc``."""

    def __init__(self, versions: list[SchemaVersion]) -> None:
        self._by_fp = {v.fingerprint: v for v in versions}
        self._families: dict[str, list[SchemaVersion]] = {}
        for v in sorted(versions, key=lambda v: (v.family, v.version)):
            self._families.setdefault(v.family, []).append(v)

    @classmethod
    def from_package(cls) -> SchemaRegistry:
        versions: list[SchemaVersion] = []
        root = resources.files("contracts") / "schemas"
        for family_dir in root.iterdir():
            if not family_dir.is_dir():
                continue
            for f in family_dir.iterdir():
                if f.name.startswith("v") and f.name.endswith(".avsc"):
                    raw = json.loads(f.read_text())
                    versions.append(make_version(family_dir.name, int(f.name[1:-5]), raw))
        return cls(versions)

    def families(self) -> list[str]:
        return sorted(self._families)

    def versions(self, family: str) -> list[SchemaVersion]:
        return list(self._families[family])

    def latest(self, family: str) -> SchemaVersion:
        return self._families[family][-1]

    def by_fingerprint(self, fp: bytes) -> SchemaVersion | None:
        return self._by_fp.get(fp)


def make_version(family: str, version: int, raw: dict[str, Any]) -> SchemaVersion:
    parsed = fastavro.parse_schema(raw, named_schemas={})
    canonical = to_parsing_canonical_form(parsed)
    fp = bytes.fromhex(fingerprint(canonical, "CRC-64-AVRO"))
    return SchemaVersion(family, version, raw, parsed, fp)


@cache
def registry() -> SchemaRegistry:
    return SchemaRegistry.from_package()


def encode_record(sv: SchemaVersion, record: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    buf.write(MAGIC)
    buf.write(sv.fingerprint)
    fastavro.schemaless_writer(buf, sv.parsed, record)
    return buf.getvalue()


@dataclass(frozen=True)
class Decoded:
    writer: SchemaVersion
    writer_record: dict[str, Any]  # as written: re-encodes to the same bytes (signatures)
    record: dict[str, Any]  # resolved to the family's latest version


def decode_record(data: bytes, reg: SchemaRegistry | None = None) -> Decoded:
    reg = reg or registry()
    if len(data) < HEADER_LEN or data[:2] != MAGIC:
        raise ContractError("MALFORMED", "not Avro single-object encoded (bad magic or too short)")
    sv = reg.by_fingerprint(data[2:HEADER_LEN])
    if sv is None:
        raise ContractError("UNKNOWN_SCHEMA", f"unknown schema fingerprint {data[2:HEADER_LEN].hex()}")
    body = io.BytesIO(data[HEADER_LEN:])
    try:
        writer_record = fastavro.schemaless_reader(body, sv.parsed, None)
        if body.tell() != len(data) - HEADER_LEN:
            raise ContractError("MALFORMED", "trailing bytes after the Avro body")
        latest = reg.latest(sv.family)
        record = writer_record
        if latest is not sv:
            record = fastavro.schemaless_reader(io.BytesIO(data[HEADER_LEN:]), sv.parsed, latest.parsed)
    except ContractError:
        raise
    except Exception as exc:  # fastavro raises EOFError, ValueError, UnicodeDecodeError, ...
        raise ContractError("MALFORMED", f"Avro body does not decode: {type(exc).__name__}") from exc
    if not isinstance(writer_record, dict) or not isinstance(record, dict):
        raise ContractError("MALFORMED", "Avro body is not a record")
    return Decoded(sv, writer_record, record)


def signing_bytes(writer: SchemaVersion, record: dict[str, Any]) -> bytes:
    """The bytes a signature covers (the one definition, for signing and verifying): the whole
    single-object encoding (magic, fingerprint, body) of the record as written with the writer
    schema ``writer``, with the ``signature`` field set to empty bytes."""
    return encode_record(writer, {**record, "signature": b""})


def writer_schema(env: Envelope, reg: SchemaRegistry | None = None) -> SchemaVersion:
    """The schema version ``env.schema_version`` names for its type."""
    for sv in (reg or registry()).versions(env.type):
        if sv.version == env.schema_version:
            return sv
    raise ContractError("SCHEMA_VERSION_MISMATCH", f"{env.type} has no schema version {env.schema_version}")


def envelope_from_decoded(decoded: Decoded) -> Envelope:
    try:
        return Envelope.model_validate(decoded.record)
    except ValueError as exc:
        first = exc.errors()[0] if hasattr(exc, "errors") else {}
        where = ".".join(str(p) for p in first.get("loc", ())) or "envelope"
        raise ContractError("INVALID_FIELD", f"{where}: {first.get('msg', 'invalid')}") from exc


def encode_envelope(env: Envelope, reg: SchemaRegistry | None = None) -> bytes:
    """Encode with the schema version the envelope names (never silently another one)."""
    return encode_record(writer_schema(env, reg), env.to_wire())


def envelope_of(decoded: Decoded) -> Envelope:
    """The envelope of a decoded record (``decode_envelope`` for a caller that keeps the decoded record)."""
    if decoded.writer.family == "rejected":
        raise ContractError("TYPE_MISMATCH", "a rejection is not an envelope")
    return envelope_from_decoded(decoded)


def decode_envelope(data: bytes, reg: SchemaRegistry | None = None) -> Envelope:
    return envelope_of(decode_record(data, reg))


def encode_rejection(rej: Rejection) -> bytes:
    return encode_record(registry().latest("rejected"), rej.to_wire())


def decode_rejection(data: bytes) -> Rejection:
    decoded = decode_record(data)
    if decoded.writer.family != "rejected":
        raise ContractError("TYPE_MISMATCH", f"expected a rejection, got {decoded.writer.family}")
    return Rejection.model_validate(decoded.record)
