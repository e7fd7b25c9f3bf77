"""The cryptography of KSTAR bundles (X-21): the Ed25519 signature over the checksum, and the encrypted envelope
(a scrypt-derived key and AES-256-GCM, with the envelope header as associated data).
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from governance.kstar.bundle_format import ENC_FORMAT, VERSION, BundleError, b64, check_version, unb64
from governance.kstar.canonical import canonical_json, parse_json

KDF_NAME = "scrypt"
CIPHER_NAME = "aes-256-gcm"
_SALT_BYTES = 16
_NONCE_BYTES = 12  # the AES-GCM standard nonce
_KEY_BYTES = 32
# Ceilings on the KDF cost a file may ask for: the header is attacker-controlled, and scrypt's memory is 128·n·r·p.
_MAX_KDF_N = 1 << 20
_MAX_KDF_MEMORY = 1 << 30


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


def public_key_b64(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    """The base64 raw public key, as ``integrity.signer_key`` and ``trusted_keys`` spell it."""
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return b64(public.public_bytes(Encoding.Raw, PublicFormat.Raw))


# ---------------------------------------------------------------------------------------------- signature


def check_signature(
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
    raw_key = unb64(signer_key, "integrity.signer_key", "BUNDLE_BAD_SIGNATURE")
    raw_signature = unb64(signature, "integrity.signature", "BUNDLE_BAD_SIGNATURE")
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


# ---------------------------------------------------------------------------------------------- encryption


def _derive(passphrase: bytes, salt: bytes, kdf: KdfParams) -> bytes:
    return Scrypt(salt=salt, length=_KEY_BYTES, n=kdf.n, r=kdf.r, p=kdf.p).derive(passphrase)


def _header(document: Mapping[str, Any]) -> bytes:
    # The associated data: a header changed in transit (version, kdf, cipher) fails the tag like a wrong key.
    return canonical_json({key: document[key] for key in ("format", "version", "kdf", "cipher")})


def seal(plaintext: bytes, passphrase: bytes, kdf: KdfParams) -> dict[str, Any]:
    if not passphrase:
        raise ValueError("empty passphrase")
    salt, nonce = os.urandom(_SALT_BYTES), os.urandom(_NONCE_BYTES)
    envelope: dict[str, Any] = {
        "format": ENC_FORMAT,
        "version": VERSION,
        "kdf": {"name": KDF_NAME, "salt": b64(salt), "n": kdf.n, "r": kdf.r, "p": kdf.p},
        "cipher": {"name": CIPHER_NAME, "nonce": b64(nonce)},
    }
    sealed = AESGCM(_derive(passphrase, salt, kdf)).encrypt(nonce, plaintext, _header(envelope))
    envelope["ciphertext"] = b64(sealed)
    return envelope


def encrypt_bundle(bundle: Mapping[str, Any], passphrase: bytes, kdf: KdfParams = KdfParams()) -> dict[str, Any]:
    """The ``kstar-bundle+enc`` envelope of ``bundle`` (its canonical JSON under AES-256-GCM, key from scrypt)."""
    return seal(canonical_json(bundle), passphrase, kdf)


def decrypt_bundle(document: Mapping[str, Any], passphrase: bytes) -> dict[str, Any]:
    """The bundle inside an envelope; ``BUNDLE_WRONG_PASSPHRASE`` when the tag fails (wrong passphrase, or any
    byte of the header or ciphertext changed: AES-GCM cannot tell these apart)."""
    return open_envelope(document, passphrase)[0]


def open_envelope(document: Mapping[str, Any], passphrase: bytes) -> tuple[dict[str, Any], bool]:
    if document.get("format") != ENC_FORMAT:
        raise BundleError("BUNDLE_BAD_FORMAT", f"format is not {ENC_FORMAT!r}")
    check_version(document)
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
    salt = unb64(kdf_doc.get("salt"), "kdf.salt")
    nonce = unb64(cipher.get("nonce"), "cipher.nonce")
    sealed = unb64(document.get("ciphertext"), "ciphertext")
    if len(nonce) != _NONCE_BYTES or not salt:
        raise BundleError("BUNDLE_BAD_FORMAT", "cipher.nonce must be 12 bytes and kdf.salt non-empty")
    try:
        plaintext = AESGCM(_derive(passphrase, salt, kdf)).decrypt(nonce, sealed, _header(document))
    except InvalidTag:
        raise BundleError("BUNDLE_WRONG_PASSPHRASE", "decryption failed: wrong passphrase or altered file") from None
    bundle, exact = parse_json(plaintext)
    if bundle.get("format") == ENC_FORMAT:
        raise BundleError("BUNDLE_BAD_FORMAT", "an envelope inside an envelope")
    return bundle, exact
