"""Building a KSTAR bundle (seed §5.1; F-21): the export document for a memory, records sorted by id so the same
memory always gives the same bytes, checksummed and optionally signed and encrypted.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from governance.kstar.bundle_crypto import KdfParams, public_key_b64, seal
from governance.kstar.bundle_format import (
    FORMAT,
    ID_FIELD,
    KINDS,
    SIGNATURE_ALGORITHM,
    VERSION,
    BundleError,
    b64,
    parse_time,
)
from governance.kstar.bundle_stats import statistics
from governance.kstar.canonical import canonical_json, dump_document, gc_paused, join_members, sha256_digest

_DEFAULT_KDF = KdfParams()


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


@gc_paused()
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
    parse_time(exported_at)
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
    digest = sha256_digest(join_members(members))
    integrity: dict[str, Any] = {
        "checksum": digest,
        "signature": b64(signer.sign(digest.encode("utf-8"))) if signer is not None else None,
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
    kdf: KdfParams = _DEFAULT_KDF,
) -> EncodedBundle:
    """``build_bundle`` plus the file bytes (encrypted when ``passphrase`` is given), serialising memory once:
    ``dump_document(build_bundle(...))`` would canonicalise it twice."""
    bundle, members = _build(agent, memory, schemas_used, exported_at, signer, extensions)
    plain = join_members(members)
    data = plain if passphrase is None else dump_document(seal(plain, passphrase, kdf))
    return EncodedBundle(bundle, data, bundle["integrity"]["checksum"])
