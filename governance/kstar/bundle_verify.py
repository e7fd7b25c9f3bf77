"""Reading and verifying a KSTAR bundle (seed §5.3; F-22, X-21): its shape, checksum, signature and statistics,
from a document or from a file's bytes (decrypted when it is an envelope).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from governance.kstar.bundle_crypto import check_signature, open_envelope
from governance.kstar.bundle_format import (
    COUNT_FIELD,
    DEFAULT_MAX_BYTES,
    ENC_FORMAT,
    FORMAT,
    ID_FIELD,
    KINDS,
    SIGNATURE_ALGORITHM,
    TOKENS,
    BundleError,
    check_version,
    parse_time,
)
from governance.kstar.bundle_stats import date_range, record_stamps, statistics
from governance.kstar.canonical import checksum_of, gc_paused, parse_json

_INTEGRITY_FIELDS = frozenset({"checksum", "signature", "signer_key", "algorithm"})
_CHECKSUM_RE = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class BundleCheck:
    checksum: str
    signed: bool
    signer_key: str | None
    statistics: dict[str, Any]
    counts: dict[str, int]


def _check_shape(bundle: Mapping[str, Any]) -> dict[str, int]:
    fmt = bundle.get("format")
    if fmt == ENC_FORMAT:
        raise BundleError("BUNDLE_ENCRYPTED", "the bundle is encrypted; decrypt it first")
    if fmt != FORMAT:
        raise BundleError("BUNDLE_BAD_FORMAT", f"format is not {FORMAT!r}")
    check_version(bundle)
    exported_at = bundle.get("exported_at")
    if not isinstance(exported_at, str):
        raise BundleError("BUNDLE_BAD_FORMAT", "exported_at is not a string")
    parse_time(exported_at)
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
    accepted = (actual["date_range"], date_range(record_stamps(memory, ("traces",))))
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


@gc_paused()
def _verify(
    bundle: Mapping[str, Any], require_signature: bool, trusted_keys: Collection[str] | None, exact: bool
) -> BundleCheck:
    counts = _check_shape(bundle)
    integrity = bundle["integrity"]
    claimed = integrity.get("checksum")
    if not isinstance(claimed, str) or not _CHECKSUM_RE.fullmatch(claimed):
        raise BundleError("BUNDLE_BAD_FORMAT", "integrity.checksum is not sha256:<64 lowercase hex>")
    digest = checksum_of(bundle, exact)
    if digest != claimed:
        raise BundleError("BUNDLE_CHECKSUM_MISMATCH", "the content does not hash to the bundle's checksum")
    signer_key = check_signature(integrity, digest, require_signature, trusted_keys)
    memory = bundle["memory"]
    _check_statistics(bundle["statistics"], {kind: memory.get(kind, []) for kind in KINDS})
    return BundleCheck(digest, signer_key is not None, signer_key, dict(bundle["statistics"]), counts)


def load_document(data: bytes, passphrase: bytes | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, Any]:
    """The plain bundle in a file's bytes, decrypted when it is an envelope. Not verified: call ``verify_bundle``
    (or use ``decode_bundle``, which does both and is faster). A plain bundle is returned even when a passphrase
    is given."""
    return _load(data, passphrase, max_bytes)[0]


@gc_paused()
def _load(data: bytes, passphrase: bytes | None, max_bytes: int) -> tuple[dict[str, Any], bool]:
    if len(data) > max_bytes:
        raise BundleError("BUNDLE_TOO_LARGE", f"{len(data)} bytes, the limit is {max_bytes}")
    document, exact = parse_json(data)
    if document.get("format") != ENC_FORMAT:
        return document, exact
    if passphrase is None:
        raise BundleError("BUNDLE_ENCRYPTED", "the bundle is encrypted and no passphrase was given")
    return open_envelope(document, passphrase)


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
