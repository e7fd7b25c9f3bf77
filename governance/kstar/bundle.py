"""KSTAR bundles (seed §5, §11.2; F-21..F-23, X-21): the portable export document, its integrity block and its
encrypted envelope. This module is the bundle's public face; the work is done, one job a module, in:

- ``bundle_format``: the names, versions and reason codes (``BundleError``) every part shares;
- ``canonical``: RFC 8785 canonical JSON, the checksum, and parsing a file's bytes;
- ``bundle_stats``: the export filter and the statistics block;
- ``bundle_crypto``: the Ed25519 signature and the encrypted envelope;
- ``bundle_build``: building a bundle (and its file bytes) from a memory;
- ``bundle_verify``: loading and verifying one.

Integrity (X-21): ``checksum`` is ``sha256:<hex>`` over the RFC 8785 canonical JSON of the bundle without its
``integrity`` member; ``signature`` is Ed25519 over the checksum string's UTF-8 bytes. Encryption: a scrypt-derived
key and AES-256-GCM, with the envelope header as associated data. Pure: no Kafka, no SQL, no files (reading and
writing a bundle file is ``projections/kstar/io.py``'s).
"""

from __future__ import annotations

from governance.kstar.bundle_build import Agent, EncodedBundle, build_bundle, encode_bundle
from governance.kstar.bundle_crypto import (
    CIPHER_NAME,
    KDF_NAME,
    KdfParams,
    decrypt_bundle,
    encrypt_bundle,
    public_key_b64,
)
from governance.kstar.bundle_format import (
    COUNT_FIELD,
    DEFAULT_MAX_BYTES,
    ENC_FORMAT,
    FORMAT,
    ID_FIELD,
    KINDS,
    SIGNATURE_ALGORITHM,
    TOKENS,
    VERSION,
    BundleError,
)
from governance.kstar.bundle_stats import ExportFilter, record_time, statistics
from governance.kstar.bundle_verify import (
    BundleCheck,
    DecodedBundle,
    decode_bundle,
    load_document,
    verify_bundle,
)
from governance.kstar.canonical import canonical_json, checksum, dump_document

__all__ = [
    "CIPHER_NAME",
    "COUNT_FIELD",
    "DEFAULT_MAX_BYTES",
    "ENC_FORMAT",
    "FORMAT",
    "ID_FIELD",
    "KDF_NAME",
    "KINDS",
    "SIGNATURE_ALGORITHM",
    "TOKENS",
    "VERSION",
    "Agent",
    "BundleCheck",
    "BundleError",
    "DecodedBundle",
    "EncodedBundle",
    "ExportFilter",
    "KdfParams",
    "build_bundle",
    "canonical_json",
    "checksum",
    "decode_bundle",
    "decrypt_bundle",
    "dump_document",
    "encode_bundle",
    "encrypt_bundle",
    "load_document",
    "public_key_b64",
    "record_time",
    "statistics",
    "verify_bundle",
]
