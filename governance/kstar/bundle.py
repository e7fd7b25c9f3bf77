"""KSTAR bundles (seed §5, §11.2; F-21..F-23, X-21): the portable export document, its integrity block and its
encrypted envelope.

Integrity (X-21): ``checksum`` is ``sha256:<hex>`` over the RFC 8785 canonical JSON of the bundle without its
``integrity`` member; ``signature`` is Ed25519 over the checksum string's UTF-8 bytes. Encryption: a scrypt-derived
key and AES-256-GCM, with the envelope header as associated data. Pure: no Kafka, no SQL; file I/O only in
``read_document``/``write_document``.
"""

from __future__ import annotations

import base64
import binascii
import gc
import hashlib
import itertools
import json
import math
import os
import re
import tempfile
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import rfc8785
from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

FORMAT = "kstar-bundle"
VERSION = "1.0.0"
ENC_FORMAT = "kstar-bundle+enc"
KINDS = ("traces", "perceptions", "facts", "skills", "control_tokens")  # bundle memory sections, seed §5.1
TOKENS = "control_tokens"
ID_FIELD = {"traces": "id", "perceptions": "id", "facts": "id", "skills": "id", "control_tokens": "token_id"}
COUNT_FIELD = {
    "traces": "trace_count",
    "perceptions": "perception_count",
    "facts": "fact_count",
    "skills": "skill_count",
    # Not in the seed's statistics: counted so "statistics match contents" covers every memory section (a token
    # slipped into a bundle shows), and so an importer can warn before taking sensitive grants.
    "control_tokens": "token_count",
}
SIGNATURE_ALGORITHM = "ed25519"
_INTEGRITY_FIELDS = frozenset({"checksum", "signature", "signer_key", "algorithm"})
KDF_NAME = "scrypt"
CIPHER_NAME = "aes-256-gcm"
DEFAULT_MAX_BYTES = 1 << 30

_MAJOR = VERSION.split(".", 1)[0]
_VERSION_RE = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")
_CHECKSUM_RE = re.compile(r"sha256:[0-9a-f]{64}")
_DATE_ONLY_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
_SAFE_INT = 2**53 - 1  # RFC 8785 / I-JSON: integers beyond this are not exact in an IEEE double
_SALT_BYTES = 16
_NONCE_BYTES = 12  # the AES-GCM standard nonce
_KEY_BYTES = 32
# Ceilings on the KDF cost a file may ask for: the header is attacker-controlled, and scrypt's memory is 128·n·r·p.
_MAX_KDF_N = 1 << 20
_MAX_KDF_MEMORY = 1 << 30


class BundleError(Exception):
    """A bundle or envelope that cannot be built, read or trusted; ``code`` is a stable reason code."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


# ---------------------------------------------------------------------------------------------- canonical JSON


class _Slow(Exception):
    """Raised inside the fast path when the C encoder's bytes could differ from RFC 8785's."""


_ENCODER = json.JSONEncoder(
    ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False, check_circular=False
)


@contextmanager
def _gc_paused() -> Iterator[None]:
    # Parsing or walking 100k records allocates millions of containers and no cycles; the cyclic collector would
    # rescan the growing heap again and again (3-4x slower). Collection is only deferred, never skipped.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def canonical_json(value: Any) -> bytes:
    """RFC 8785 bytes of ``value``: byte-identical to ``rfc8785.dumps`` wherever it gives bytes (mappings and tuples
    taken as objects and arrays); also ints beyond 2**53 already spelled as RFC 8785 prints their double.
    ``BundleError(BUNDLE_BAD_FORMAT)`` if the value has no canonical form (NaN, 2**53+1, non-string key)."""
    # rfc8785 is pure Python (~10 s for 100k traces). The C encoder gives the same bytes whenever every key sorts
    # the same by code point as by UTF-16 unit, every int is safe and every float prints the same in Python and
    # ECMAScript; _plain checks that in one walk and hands anything else, subtree by subtree, to rfc8785.
    return _canonical(value, exact=False)


def _canonical(value: Any, exact: bool) -> bytes:
    """``exact``: the caller knows ``value`` needs no walk (parsed JSON that _scan_json found plain)."""
    try:
        with _gc_paused():
            return _ENCODER.encode(value if exact else _plain(value)).encode("utf-8")
    except (_Slow, UnicodeEncodeError):
        return _canonical_slow(value)
    except RecursionError:
        raise BundleError("BUNDLE_BAD_FORMAT", "JSON nested too deeply (or circular)") from None


def _canonical_slow(value: Any) -> bytes:
    if isinstance(value, Mapping):
        if not all(isinstance(key, str) for key in value):
            raise BundleError("BUNDLE_BAD_FORMAT", "object keys must be strings")
        # RFC 8785 §3.2.3: members sorted by the UTF-16 code units of their names.
        keys = sorted(value, key=lambda key: key.encode("utf-16-be", "surrogatepass"))
        return b"{" + b",".join(canonical_json(key) + b":" + canonical_json(value[key]) for key in keys) + b"}"
    if isinstance(value, list | tuple):
        return b"[" + b",".join(canonical_json(item) for item in value) + b"]"
    if isinstance(value, int) and not isinstance(value, bool) and not -_SAFE_INT <= value <= _SAFE_INT:
        # JSON numbers are doubles, and RFC 8785 prints a big integral double as its shortest digits padded with
        # zeros, which a parser reads back as a big int. Such an int is canonical as it stands (so a bundle
        # re-verifies whatever parser loaded it); any other big int would read back changed, so it is refused.
        double = float(value) if abs(value) < 2**1023 else math.inf
        printed = rfc8785.dumps(double) if math.isfinite(double) else b""
        if printed.lstrip(b"-").isdigit() and int(printed) == value:
            return printed
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError:
        raise BundleError("BUNDLE_BAD_FORMAT", "not representable as canonical JSON") from None


def _plain(value: Any) -> Any:
    """``value`` itself when the C encoder prints it canonically, else a copy that it does (integral floats become
    ints; other mappings become dicts); raises _Slow where only rfc8785 knows the answer."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is dict:
        return _plain_dict(value)
    if kind is list or kind is tuple:
        return _plain_list(value)
    if kind is int:
        if -_SAFE_INT <= value <= _SAFE_INT:
            return value
        raise _Slow
    if kind is float:
        return _plain_float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return _plain(int(value))
    if isinstance(value, float):
        return _plain_float(float(value))
    if isinstance(value, Mapping):
        return _plain_dict(dict(value))
    if isinstance(value, list | tuple):
        return _plain_list(value)
    raise _Slow


def _plain_dict(value: dict[Any, Any]) -> dict[Any, Any]:
    try:
        keys = "".join(value)
    except TypeError:
        raise _Slow from None  # a non-string key: rfc8785 refuses it, json would quietly stringify it
    if not keys.isascii() and max(keys) > "\uffff":
        raise _Slow  # astral-plane keys sort differently by UTF-16 unit than by code point
    copy: dict[Any, Any] | None = None
    for key, item in value.items():
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int and -_SAFE_INT <= item <= _SAFE_INT:
            continue
        # Containers dispatched here, not via _plain: one call fewer per node over millions of nodes.
        plain = _plain_dict(item) if kind is dict else _plain_list(item) if kind is list else _plain(item)
        if plain is not item:
            if copy is None:
                copy = dict(value)
            copy[key] = plain
    return value if copy is None else copy


def _plain_list(value: list[Any] | tuple[Any, ...]) -> list[Any] | tuple[Any, ...]:
    copy: list[Any] | None = None
    for index, item in enumerate(value):
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int and -_SAFE_INT <= item <= _SAFE_INT:
            continue
        # Containers dispatched here, not via _plain: one call fewer per node over millions of nodes.
        plain = _plain_dict(item) if kind is dict else _plain_list(item) if kind is list else _plain(item)
        if plain is not item:
            if copy is None:
                copy = list(value)
            copy[index] = plain
    return value if copy is None else copy


def _plain_float(value: float) -> float | int:
    if not math.isfinite(value):
        raise _Slow
    if value.is_integer():
        # ECMAScript prints integral doubles without ".0"; below 2**53 that is exactly str(int(value)).
        if abs(value) <= _SAFE_INT:
            return int(value)
        raise _Slow
    if "e" in repr(value):
        raise _Slow  # exponent notation: Python and ECMAScript disagree on where and how
    return value


def _join_members(members: Mapping[str, bytes]) -> bytes:
    """Canonical object from members already canonicalised, so the big ``memory`` member is serialised once."""
    keys = sorted(members, key=lambda key: key.encode("utf-16-be", "surrogatepass"))
    return b"{" + b",".join(canonical_json(key) + b":" + members[key] for key in keys) + b"}"


def _digest(canonical: bytes) -> str:
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


def checksum(bundle: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``bundle`` without its ``integrity`` member (X-21)."""
    return _checksum(bundle, exact=False)


def _checksum(bundle: Mapping[str, Any], exact: bool) -> str:
    return _digest(_canonical({key: value for key, value in bundle.items() if key != "integrity"}, exact))


def dump_document(document: Mapping[str, Any]) -> bytes:
    """The bytes a bundle or envelope file holds: its canonical JSON."""
    return canonical_json(document)


# ---------------------------------------------------------------------------------------------- time and filters


def _parse_time(value: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
    except (TypeError, ValueError, OverflowError):
        raise BundleError("BUNDLE_BAD_FORMAT", "a record time is not an ISO-8601 time") from None
    # Naive times are taken as UTC: the seed writes every time as UTC.
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).astimezone(UTC)


def record_time(kind: str, record: Mapping[str, Any]) -> str | None:
    """The time a record is dated by for date filters and ``date_range``; None when it has none."""
    if kind == "traces":
        value = record.get("timestamp")
    elif kind in ("perceptions", "facts"):
        value = record.get("created_at")
    elif kind == "skills":
        maturity = record.get("maturity")
        value = maturity.get("last_used") if isinstance(maturity, Mapping) else None
    elif kind == TOKENS:
        value = record.get("granted_at")
    else:
        raise ValueError(f"unknown memory kind {kind!r}")
    if value is None or isinstance(value, str):
        return value
    raise BundleError("BUNDLE_BAD_FORMAT", f"{kind} record time is not a string")


@dataclass(frozen=True)
class ExportFilter:
    """What an export takes (seed §5.2): memory types, control tokens only on request, an inclusive date range.

    ``include_tokens`` is the only way tokens get in (the seed's explicit ``--include-tokens``), whatever ``types``
    says. A date-only ``date_to`` covers that whole day. Records without a time (a never-used skill) are kept."""

    types: frozenset[str] = frozenset(KINDS) - {TOKENS}
    include_tokens: bool = False
    date_from: str | None = None
    date_to: str | None = None
    _kinds: frozenset[str] = field(init=False, repr=False, compare=False)
    _lower: datetime | None = field(init=False, repr=False, compare=False)
    _upper: datetime | None = field(init=False, repr=False, compare=False)
    _upper_exclusive: bool = field(init=False, repr=False, compare=False)  # a date-only date_to: next midnight

    def __post_init__(self) -> None:
        unknown = set(self.types) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown memory types; known: {', '.join(KINDS)}")
        kinds = frozenset(self.types) - {TOKENS} | ({TOKENS} if self.include_tokens else set())
        lower = _parse_bound(self.date_from) if self.date_from is not None else None
        upper = _parse_bound(self.date_to) if self.date_to is not None else None
        exclusive = self.date_to is not None and _DATE_ONLY_RE.fullmatch(self.date_to) is not None
        if upper is not None and exclusive:
            upper += timedelta(days=1)
        if lower is not None and upper is not None and lower > upper:
            raise ValueError("from is after to")
        object.__setattr__(self, "_kinds", kinds)
        object.__setattr__(self, "_lower", lower)
        object.__setattr__(self, "_upper", upper)
        object.__setattr__(self, "_upper_exclusive", exclusive)

    @property
    def kinds(self) -> frozenset[str]:
        """The memory sections this filter admits at all."""
        return self._kinds

    def admits(self, kind: str, record: Mapping[str, Any]) -> bool:
        if kind not in self._kinds:
            return False
        if self._lower is None and self._upper is None:
            return True
        stamp = record_time(kind, record)
        if stamp is None:
            return True
        when = _parse_time(stamp)
        if self._lower is not None and when < self._lower:
            return False
        if self._upper is None:
            return True
        return when < self._upper if self._upper_exclusive else when <= self._upper

    def apply(self, memory: Mapping[str, Iterable[Mapping[str, Any]]]) -> dict[str, list[Mapping[str, Any]]]:
        """The admitted records of ``memory``, every kind present (empty when filtered out)."""
        return {kind: [record for record in memory.get(kind, ()) if self.admits(kind, record)] for kind in KINDS}


def _parse_bound(value: str) -> datetime:
    try:
        return _parse_time(value)
    except BundleError:
        raise ValueError("not an ISO-8601 date or time") from None


# ---------------------------------------------------------------------------------------------- statistics


def _date_range(stamps: Iterable[str]) -> dict[str, str | None]:
    # Compared as instants, not strings: "…00Z" and "…00.5Z" sort the wrong way round as text. Ties between two
    # spellings of one instant go to the smaller string so the result never depends on record order.
    timed = [(_parse_time(stamp), stamp) for stamp in stamps]
    if not timed:
        return {"earliest": None, "latest": None}
    first, last = min(when for when, _ in timed), max(when for when, _ in timed)
    return {
        "earliest": min(stamp for when, stamp in timed if when == first),
        "latest": min(stamp for when, stamp in timed if when == last),
    }


def _stamps(memory: Mapping[str, Sequence[Mapping[str, Any]]], kinds: Iterable[str]) -> list[str]:
    return [
        stamp for kind in kinds for record in memory.get(kind, ()) if (stamp := record_time(kind, record)) is not None
    ]


def statistics(memory: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Seed §5.1 statistics of ``memory``, plus ``token_count``.

    ``date_range`` spans the time of every record in the bundle (``record_time``): the seed does not say which
    times it covers, and the export's date filter is applied to those same times."""
    stats: dict[str, Any] = {COUNT_FIELD[kind]: len(memory.get(kind, ())) for kind in KINDS}
    stats["date_range"] = _date_range(_stamps(memory, KINDS))
    return stats


# ---------------------------------------------------------------------------------------------- building


@dataclass(frozen=True)
class KdfParams:
    """scrypt cost (X-21). n=2**15, r=8, p=1 is 32 MiB and ~0.1 s per derivation: the common interactive setting,
    memory-hard enough that guessing passphrases needs memory per guess, cheap enough for a CLI on a laptop or a
    pod with a modest memory limit."""

    n: int = 2**15
    r: int = 8
    p: int = 1

    def __post_init__(self) -> None:
        if not (self.n > 1 and self.n & (self.n - 1) == 0 and self.n <= _MAX_KDF_N):
            raise ValueError(f"scrypt n must be a power of two in 2..{_MAX_KDF_N}")
        if not (1 <= self.r <= 64 and 1 <= self.p <= 16) or 128 * self.n * self.r * self.p > _MAX_KDF_MEMORY:
            raise ValueError("scrypt r/p out of range or memory above 1 GiB")


@dataclass(frozen=True)
class Agent:
    id: str
    type: str
    version: str


@dataclass(frozen=True)
class EncodedBundle:
    """A built bundle and the file bytes for it (canonical JSON, or the encrypted envelope's)."""

    bundle: dict[str, Any]
    data: bytes
    checksum: str


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _unb64(value: Any, what: str, code: str = "BUNDLE_BAD_FORMAT") -> bytes:
    if not isinstance(value, str):
        raise BundleError(code, f"{what} is not a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise BundleError(code, f"{what} is not valid base64") from None


def public_key_b64(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    """The base64 raw public key, as ``integrity.signer_key`` and ``trusted_keys`` spell it."""
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return _b64(public.public_bytes(Encoding.Raw, PublicFormat.Raw))


def _sorted_records(kind: str, records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    id_field = ID_FIELD[kind]
    keyed: list[tuple[str, Mapping[str, Any]]] = []
    for record in records:
        if not isinstance(record, Mapping) or not isinstance(record.get(id_field), str):
            raise BundleError("BUNDLE_BAD_FORMAT", f"a {kind} record has no string {id_field!r}")
        keyed.append((record[id_field], record))
    keyed.sort(key=lambda pair: pair[0])
    for (left, _), (right, _) in itertools.pairwise(keyed):
        if left == right:
            # Two records under one id have no stable order, and an importer could keep only one of them.
            raise BundleError("BUNDLE_BAD_FORMAT", f"a {kind} {id_field} appears twice")
    return [record for _, record in keyed]


@_gc_paused()
def _build(
    agent: Agent,
    memory: Mapping[str, Sequence[Mapping[str, Any]]],
    schemas_used: Sequence[str],
    exported_at: str,
    signer: Ed25519PrivateKey | None,
    extensions: Mapping[str, Any] | None,
) -> tuple[dict[str, Any], dict[str, bytes]]:
    unknown = set(memory) - set(KINDS)
    if unknown:
        raise ValueError(f"unknown memory kinds; known: {', '.join(KINDS)}")
    _parse_time(exported_at)
    sections = {kind: _sorted_records(kind, memory.get(kind, ())) for kind in KINDS}
    body: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": exported_at,
        "agent": {"id": agent.id, "type": agent.type, "version": agent.version},
        "memory": sections,
        "schemas_used": sorted(set(schemas_used)),  # a set in meaning; sorted so equal exports are equal bytes
        "statistics": statistics(sections),
    }
    if extensions is not None:
        body["extensions"] = dict(extensions)
    members = {key: canonical_json(value) for key, value in body.items()}
    digest = _digest(_join_members(members))
    integrity: dict[str, Any] = {
        "checksum": digest,
        "signature": _b64(signer.sign(digest.encode("utf-8"))) if signer is not None else None,
        "signer_key": public_key_b64(signer) if signer is not None else None,
        "algorithm": SIGNATURE_ALGORITHM,
    }
    members["integrity"] = canonical_json(integrity)
    return {**body, "integrity": integrity}, members


def build_bundle(
    agent: Agent,
    memory: Mapping[str, Sequence[Mapping[str, Any]]],
    schemas_used: Sequence[str],
    exported_at: str,
    signer: Ed25519PrivateKey | None = None,
    extensions: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The seed §5.1 document for ``memory`` (already filtered), checksummed and optionally signed.

    Every kind is present, records sorted by id, so the same memory always gives the same bytes. Records are
    referenced, not copied: do not mutate them while the bundle is in use. ``extensions`` (HiveMem's other
    memories) becomes a top-level ``extensions`` object covered by the checksum."""
    return _build(agent, memory, schemas_used, exported_at, signer, extensions)[0]


def encode_bundle(
    agent: Agent,
    memory: Mapping[str, Sequence[Mapping[str, Any]]],
    schemas_used: Sequence[str],
    exported_at: str,
    signer: Ed25519PrivateKey | None = None,
    extensions: Mapping[str, Any] | None = None,
    passphrase: bytes | None = None,
    kdf: KdfParams = KdfParams(),
) -> EncodedBundle:
    """``build_bundle`` plus the file bytes (encrypted when ``passphrase`` is given), serialising memory once:
    ``dump_document(build_bundle(...))`` would canonicalise it twice."""
    bundle, members = _build(agent, memory, schemas_used, exported_at, signer, extensions)
    plain = _join_members(members)
    data = plain if passphrase is None else dump_document(_seal(plain, passphrase, kdf))
    return EncodedBundle(bundle, data, bundle["integrity"]["checksum"])


# ---------------------------------------------------------------------------------------------- verifying


@dataclass(frozen=True)
class BundleCheck:
    checksum: str
    signed: bool
    signer_key: str | None
    statistics: dict[str, Any]
    counts: dict[str, int]


def _check_version(document: Mapping[str, Any]) -> None:
    version = document.get("version")
    match = _VERSION_RE.fullmatch(version) if isinstance(version, str) else None
    if match is None:
        raise BundleError("BUNDLE_BAD_FORMAT", "version is not MAJOR.MINOR.PATCH")
    if match.group(1) != _MAJOR:
        raise BundleError("BUNDLE_BAD_FORMAT", f"unsupported bundle major version (this reads {_MAJOR}.x)")


def _check_shape(bundle: Mapping[str, Any]) -> dict[str, int]:
    fmt = bundle.get("format")
    if fmt == ENC_FORMAT:
        raise BundleError("BUNDLE_ENCRYPTED", "the bundle is encrypted; decrypt it first")
    if fmt != FORMAT:
        raise BundleError("BUNDLE_BAD_FORMAT", f"format is not {FORMAT!r}")
    _check_version(bundle)
    exported_at = bundle.get("exported_at")
    if not isinstance(exported_at, str):
        raise BundleError("BUNDLE_BAD_FORMAT", "exported_at is not a string")
    _parse_time(exported_at)
    agent = bundle.get("agent")
    if not isinstance(agent, Mapping) or not all(isinstance(agent.get(key), str) for key in ("id", "type", "version")):
        raise BundleError("BUNDLE_BAD_FORMAT", "agent must be an object with string id, type and version")
    schemas = bundle.get("schemas_used")
    if not isinstance(schemas, list) or not all(isinstance(name, str) for name in schemas):
        raise BundleError("BUNDLE_BAD_FORMAT", "schemas_used must be a list of strings")
    if not isinstance(bundle.get("statistics"), Mapping):
        raise BundleError("BUNDLE_BAD_FORMAT", "statistics is not an object")
    if "extensions" in bundle and not isinstance(bundle["extensions"], Mapping):
        raise BundleError("BUNDLE_BAD_FORMAT", "extensions is not an object")
    memory = bundle.get("memory")
    if not isinstance(memory, Mapping):
        raise BundleError("BUNDLE_BAD_FORMAT", "memory is not an object")
    counts: dict[str, int] = {}
    for kind in KINDS:
        # A missing section reads as empty: the seed leaves control_tokens out of exports without the flag.
        records = memory.get(kind, [])
        if not isinstance(records, list):
            raise BundleError("BUNDLE_BAD_FORMAT", f"memory.{kind} is not a list")
        id_field = ID_FIELD[kind]
        ids = set()
        for record in records:
            if not isinstance(record, Mapping) or not isinstance(record.get(id_field), str):
                raise BundleError("BUNDLE_BAD_FORMAT", f"a memory.{kind} record has no string {id_field!r}")
            ids.add(record[id_field])
        if len(ids) != len(records):
            raise BundleError("BUNDLE_BAD_FORMAT", f"memory.{kind} holds one {id_field} twice")
        counts[kind] = len(records)
    integrity = bundle.get("integrity")
    if not isinstance(integrity, Mapping):
        raise BundleError("BUNDLE_BAD_FORMAT", "integrity is not an object")
    # integrity is the one member the checksum cannot cover, so it is a closed set: nothing rides along unchecked.
    extra = set(integrity) - _INTEGRITY_FIELDS
    if extra:
        raise BundleError("BUNDLE_BAD_FORMAT", f"unknown integrity fields {sorted(extra)[:4]}")
    if integrity.get("algorithm", SIGNATURE_ALGORITHM) != SIGNATURE_ALGORITHM:
        raise BundleError("BUNDLE_BAD_FORMAT", "unsupported signature algorithm")
    if integrity.get("signature") is None and integrity.get("signer_key") is not None:
        raise BundleError("BUNDLE_BAD_FORMAT", "a signer_key without a signature")
    return counts


def _check_signature(
    integrity: Mapping[str, Any], digest: str, require_signature: bool, trusted_keys: Collection[str] | None
) -> str | None:
    signature = integrity.get("signature")
    if signature is None:
        if require_signature or trusted_keys is not None:
            raise BundleError("BUNDLE_UNSIGNED", "the bundle is not signed and a signature is required")
        return None
    signer_key = integrity.get("signer_key")
    if not isinstance(signer_key, str):
        raise BundleError("BUNDLE_BAD_SIGNATURE", "a signature without a signer_key cannot be checked")
    raw_key = _unb64(signer_key, "integrity.signer_key", "BUNDLE_BAD_SIGNATURE")
    raw_signature = _unb64(signature, "integrity.signature", "BUNDLE_BAD_SIGNATURE")
    try:
        Ed25519PublicKey.from_public_bytes(raw_key).verify(raw_signature, digest.encode("utf-8"))
    except (InvalidSignature, ValueError):
        raise BundleError("BUNDLE_BAD_SIGNATURE", "the signature does not verify against signer_key") from None
    if trusted_keys is not None and raw_key not in _raw_keys(trusted_keys):
        raise BundleError("BUNDLE_BAD_SIGNATURE", "the signer is not trusted")
    return signer_key


def _raw_keys(keys: Collection[str]) -> set[bytes]:
    # Compared as bytes, so two base64 spellings of one key are one key.
    try:
        return {base64.b64decode(key, validate=True) for key in keys}
    except (binascii.Error, ValueError, TypeError):
        raise ValueError("trusted_keys must be base64 raw Ed25519 public keys") from None


def _check_statistics(claimed: Mapping[str, Any], memory: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
    actual = statistics(memory)
    for kind in KINDS:
        name = COUNT_FIELD[kind]
        if kind == TOKENS and name not in claimed:
            continue  # our extra field; a seed-only exporter does not write it
        value = claimed.get(name)
        if type(value) is not int or value != actual[name]:
            detail = f"statistics.{name} is {value!r}, the bundle holds {actual[name]}"
            raise BundleError("BUNDLE_STATS_MISMATCH", detail)
    # The seed does not say what date_range spans; an exporter reading it as "traces only" is also right.
    accepted = (actual["date_range"], _date_range(_stamps(memory, ("traces",))))
    if claimed.get("date_range") not in accepted:
        raise BundleError(
            "BUNDLE_STATS_MISMATCH", f"statistics.date_range is {claimed.get('date_range')!r}, not {accepted[0]!r}"
        )


def verify_bundle(
    bundle: Mapping[str, Any], require_signature: bool = False, trusted_keys: Collection[str] | None = None
) -> BundleCheck:
    """Check shape, checksum, signature and statistics, in that order; raise ``BundleError`` on the first failure.

    With ``trusted_keys`` (base64 raw Ed25519 public keys) the bundle must be signed by one of them."""
    return _verify(bundle, require_signature, trusted_keys, exact=False)


@_gc_paused()
def _verify(
    bundle: Mapping[str, Any], require_signature: bool, trusted_keys: Collection[str] | None, exact: bool
) -> BundleCheck:
    counts = _check_shape(bundle)
    integrity = bundle["integrity"]
    claimed = integrity.get("checksum")
    if not isinstance(claimed, str) or not _CHECKSUM_RE.fullmatch(claimed):
        raise BundleError("BUNDLE_BAD_FORMAT", "integrity.checksum is not sha256:<64 lowercase hex>")
    digest = _checksum(bundle, exact)
    if digest != claimed:
        raise BundleError("BUNDLE_CHECKSUM_MISMATCH", "the content does not hash to the bundle's checksum")
    signer_key = _check_signature(integrity, digest, require_signature, trusted_keys)
    memory = bundle["memory"]
    _check_statistics(bundle["statistics"], {kind: memory.get(kind, []) for kind in KINDS})
    return BundleCheck(digest, signer_key is not None, signer_key, dict(bundle["statistics"]), counts)


# ---------------------------------------------------------------------------------------------- encryption


def _derive(passphrase: bytes, salt: bytes, kdf: KdfParams) -> bytes:
    return Scrypt(salt=salt, length=_KEY_BYTES, n=kdf.n, r=kdf.r, p=kdf.p).derive(passphrase)


def _header(document: Mapping[str, Any]) -> bytes:
    # The associated data: a header changed in transit (version, kdf, cipher) fails the tag like a wrong key.
    return canonical_json({key: document[key] for key in ("format", "version", "kdf", "cipher")})


def _seal(plaintext: bytes, passphrase: bytes, kdf: KdfParams) -> dict[str, Any]:
    if not passphrase:
        raise ValueError("empty passphrase")
    salt, nonce = os.urandom(_SALT_BYTES), os.urandom(_NONCE_BYTES)
    envelope: dict[str, Any] = {
        "format": ENC_FORMAT,
        "version": VERSION,
        "kdf": {"name": KDF_NAME, "salt": _b64(salt), "n": kdf.n, "r": kdf.r, "p": kdf.p},
        "cipher": {"name": CIPHER_NAME, "nonce": _b64(nonce)},
    }
    sealed = AESGCM(_derive(passphrase, salt, kdf)).encrypt(nonce, plaintext, _header(envelope))
    envelope["ciphertext"] = _b64(sealed)
    return envelope


def encrypt_bundle(bundle: Mapping[str, Any], passphrase: bytes, kdf: KdfParams = KdfParams()) -> dict[str, Any]:
    """The ``kstar-bundle+enc`` envelope of ``bundle`` (its canonical JSON under AES-256-GCM, key from scrypt)."""
    return _seal(canonical_json(bundle), passphrase, kdf)


def decrypt_bundle(document: Mapping[str, Any], passphrase: bytes) -> dict[str, Any]:
    """The bundle inside an envelope; ``BUNDLE_WRONG_PASSPHRASE`` when the tag fails (wrong passphrase, or any
    byte of the header or ciphertext changed: AES-GCM cannot tell these apart)."""
    return _open(document, passphrase)[0]


def _open(document: Mapping[str, Any], passphrase: bytes) -> tuple[dict[str, Any], bool]:
    if document.get("format") != ENC_FORMAT:
        raise BundleError("BUNDLE_BAD_FORMAT", f"format is not {ENC_FORMAT!r}")
    _check_version(document)
    kdf_doc, cipher = document.get("kdf"), document.get("cipher")
    if not isinstance(kdf_doc, Mapping) or kdf_doc.get("name") != KDF_NAME:
        raise BundleError("BUNDLE_BAD_FORMAT", f"kdf must be {KDF_NAME}")
    if not isinstance(cipher, Mapping) or cipher.get("name") != CIPHER_NAME:
        raise BundleError("BUNDLE_BAD_FORMAT", f"cipher must be {CIPHER_NAME}")
    try:
        if not all(type(kdf_doc.get(name)) is int for name in ("n", "r", "p")):
            raise ValueError("scrypt n, r and p must be integers")
        kdf = KdfParams(kdf_doc["n"], kdf_doc["r"], kdf_doc["p"])
    except ValueError as exc:
        raise BundleError("BUNDLE_BAD_FORMAT", f"kdf parameters refused: {exc}") from None
    salt = _unb64(kdf_doc.get("salt"), "kdf.salt")
    nonce = _unb64(cipher.get("nonce"), "cipher.nonce")
    sealed = _unb64(document.get("ciphertext"), "ciphertext")
    if len(nonce) != _NONCE_BYTES or not salt:
        raise BundleError("BUNDLE_BAD_FORMAT", "cipher.nonce must be 12 bytes and kdf.salt non-empty")
    try:
        plaintext = AESGCM(_derive(passphrase, salt, kdf)).decrypt(nonce, sealed, _header(document))
    except InvalidTag:
        raise BundleError("BUNDLE_WRONG_PASSPHRASE", "decryption failed: wrong passphrase or altered file") from None
    bundle, exact = _parse_json(plaintext)
    if bundle.get("format") == ENC_FORMAT:
        raise BundleError("BUNDLE_BAD_FORMAT", "an envelope inside an envelope")
    return bundle, exact


# ---------------------------------------------------------------------------------------------- files


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abAB]")
_ASTRAL_LEADS = (b"\xf0", b"\xf1", b"\xf2", b"\xf3", b"\xf4")


class _NumberScan:
    """json.loads hooks noting whether any number would print differently in RFC 8785 than in Python."""

    __slots__ = ("exact",)

    def __init__(self) -> None:
        self.exact = True

    def parse_float(self, text: str) -> float:
        value = float(text)
        if not math.isfinite(value) or value.is_integer() or "e" in repr(value):
            self.exact = False
        return value

    def parse_int(self, text: str) -> int:
        if len(text) > 15:  # 10**15 < 2**53: shorter ones are safe without looking closer
            self.exact = False
        return int(text)

    @staticmethod
    def parse_constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")


def _parse_json(data: bytes) -> tuple[dict[str, Any], bool]:
    """The document, and whether it can be canonicalised without the _plain walk: parsed JSON has only string keys
    and plain types, so what is left to rule out is odd numbers and astral characters (which might sit in keys)."""
    scan = _NumberScan()
    try:
        text = data.decode("utf-8")
        with _gc_paused():
            document = json.loads(
                text, parse_float=scan.parse_float, parse_int=scan.parse_int, parse_constant=scan.parse_constant
            )
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise BundleError("BUNDLE_NOT_JSON", f"not a UTF-8 JSON document: {str(exc)[:200]}") from None
    if not isinstance(document, dict):
        raise BundleError("BUNDLE_BAD_FORMAT", "the document is not a JSON object")
    # Astral characters are 4-byte UTF-8 sequences, led by bytes F0-F4; a byte search is far cheaper than max(text).
    astral = any(lead in data for lead in _ASTRAL_LEADS)
    return document, scan.exact and not astral and _SURROGATE_ESCAPE.search(text) is None


def load_document(data: bytes, passphrase: bytes | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, Any]:
    """The plain bundle in a file's bytes, decrypted when it is an envelope. Not verified: call ``verify_bundle``
    (or use ``decode_bundle``, which does both and is faster). A plain bundle is returned even when a passphrase
    is given."""
    return _load(data, passphrase, max_bytes)[0]


@_gc_paused()
def _load(data: bytes, passphrase: bytes | None, max_bytes: int) -> tuple[dict[str, Any], bool]:
    if len(data) > max_bytes:
        raise BundleError("BUNDLE_TOO_LARGE", f"{len(data)} bytes, the limit is {max_bytes}")
    document, exact = _parse_json(data)
    if document.get("format") != ENC_FORMAT:
        return document, exact
    if passphrase is None:
        raise BundleError("BUNDLE_ENCRYPTED", "the bundle is encrypted and no passphrase was given")
    return _open(document, passphrase)


@dataclass(frozen=True)
class DecodedBundle:
    bundle: dict[str, Any]
    check: BundleCheck


def decode_bundle(
    data: bytes,
    passphrase: bytes | None = None,
    require_signature: bool = False,
    trusted_keys: Collection[str] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> DecodedBundle:
    """``load_document`` then ``verify_bundle``; knowing the bundle came from the parser, it skips a walk."""
    bundle, exact = _load(data, passphrase, max_bytes)
    return DecodedBundle(bundle, _verify(bundle, require_signature, trusted_keys, exact))


def read_document(path: Path, passphrase: bytes | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, Any]:
    """``load_document`` of a file; the size is checked before reading it."""
    size = path.stat().st_size
    if size > max_bytes:
        raise BundleError("BUNDLE_TOO_LARGE", f"{path} is {size} bytes, the limit is {max_bytes}")
    return load_document(path.read_bytes(), passphrase, max_bytes)


def write_document(path: Path, data: bytes) -> None:
    """Write bundle bytes atomically, mode 600: a bundle is the user's whole memory (seed §11.1)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
