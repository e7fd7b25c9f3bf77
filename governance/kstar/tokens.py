"""Control tokens (seed 003 §7, §11.4; X-22): signing, the checks before storing, verification, lineage, revocation.

* Chain order: ``delegation_chain`` lists the ancestors *nearest first*: ``[direct parent, grandparent, …, root]``.
  §7.3's ``get_token_lineage`` returns ``[token] + parents in delegation_chain order``; only this order makes
  that list one walk up the chain of custody (token, parent, …, root). A child's chain is therefore
  ``[parent.token_id, *parent.delegation_chain]``.
* Scope coverage (delegation narrowing and verify's scope check): scope ``a`` covers ``b`` when they are equal,
  ``a`` is ``*``, or ``b`` extends ``a`` at a ``:`` or ``/`` boundary: ``course:CS101`` covers
  ``course:CS101/week1`` and ``course:CS101:quiz``, not ``course:CS1010``. A malformed scope
  (``records.is_scope``) covers nothing and is covered by nothing, so ``course:CS101/../CS102`` never passes.
* Expiry: a token is expired when ``expires_at < at`` (the seed's ``expires_at < now``), so it is still valid at
  its expiry millisecond; no ``expires_at`` means no expiry (refused for ``session`` tokens when stored).
* Signature: Ed25519 over RFC 8785 canonical JSON of the token without ``signature`` and the revocation fields
  (revocation is later state, not what the issuer signed), so a revoked token still verifies its signature.
  ``signer_key`` and ``lineage_hash`` are inside what is signed.
* Revoking an ancestor invalidates every descendant at verify time (nothing is rewritten).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from contracts.models import MAX_TEXT, clean_text
from governance.kstar.domains import TokenType, scope_matches_pattern
from governance.kstar.records import ControlToken, KstarRefusal, canonical_doc, is_scope, iso_to_ms, normalise_time

_UNSIGNED = ("signature", "revoked", "revoked_at", "revocation_reason")
_ISSUER_INFO = b"hivemem/kstar-issuer/v1|"
DELEGATE = "delegate"


# ---------------------------------------------------------------------------------------------- signing


def token_signing_bytes(token: ControlToken) -> bytes:
    doc = canonical_doc(token)
    for key in _UNSIGNED:
        doc.pop(key, None)
    return rfc8785.dumps(doc)


def public_key_b64(key: Ed25519PrivateKey) -> str:
    return base64.b64encode(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)).decode()


def lineage_hash(chain: Sequence[str]) -> str:
    return "sha256:" + hashlib.sha256(rfc8785.dumps(list(chain))).hexdigest()


def sign_token(token: ControlToken, private_key: Ed25519PrivateKey) -> ControlToken:
    """The token with ``signer_key``, ``lineage_hash`` (of its chain) and ``signature`` set."""
    unsigned = token.model_copy(update={
        "signer_key": public_key_b64(private_key), "lineage_hash": lineage_hash(token.delegation_chain),
        "signature": "",
    })  # fmt: skip
    signature = private_key.sign(token_signing_bytes(unsigned))
    return unsigned.model_copy(update={"signature": base64.b64encode(signature).decode()})


def _b64(value: str, size: int) -> bytes | None:
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == size else None


def signature_ok(token: ControlToken) -> bool:
    """Does ``signature`` verify under ``signer_key``? (Integrity only: whether that key may issue is the caller's.)"""
    key, signature = _b64(token.signer_key, 32), _b64(token.signature, 64)
    if key is None or signature is None:
        return False
    try:
        Ed25519PublicKey.from_public_bytes(key).verify(signature, token_signing_bytes(token))
    except (InvalidSignature, ValueError):
        return False
    return True


@lru_cache(maxsize=4096)  # derived per stored token; cached, it is a dict probe
def issuer_key(secret: bytes, tenant: str, claw_id: str) -> Ed25519PrivateKey:
    """The deterministic issuer key of one claw: the same secret always yields the same key, so replays agree."""
    if "|" in tenant or "|" in claw_id:  # the separator: ("a|b", "c") and ("a", "b|c") must not share a key
        raise ValueError("tenant and claw id must not contain '|'")
    seed = hmac.new(secret, _ISSUER_INFO + tenant.encode() + b"|" + claw_id.encode(), hashlib.sha256).digest()
    return Ed25519PrivateKey.from_private_bytes(seed)


# ---------------------------------------------------------------------------------------------- rules


def scope_covers(outer: str, inner: str) -> bool:
    """Does scope ``outer`` include scope ``inner``? (see the module docstring)"""
    if not (is_scope(outer) and is_scope(inner)):
        return False
    if outer in ("*", inner):
        return True
    return inner.startswith(outer) and inner[len(outer)] in ":/"


def is_expired(token: ControlToken, at_ms: int) -> bool:
    return token.expires_at is not None and iso_to_ms(token.expires_at) < at_ms


def _check_link(parent: ControlToken, child: ControlToken, i: int) -> None:
    """X-22's rules for one delegation step, parent (``delegation_chain[i]``) to child. The refusal
    names the chain position, not the tokens' ids."""
    p, c = f"delegation_chain[{i}]", ("the token" if i == 0 else f"delegation_chain[{i - 1}]")
    if parent.type != "delegation" and DELEGATE not in parent.permissions:
        raise KstarRefusal("DELEGATION_NOT_ALLOWED", f"{p} is neither a delegation token nor holds {DELEGATE!r}")
    if not scope_covers(parent.scope, child.scope):
        raise KstarRefusal("DELEGATION_SCOPE_WIDENED", f"the scope of {c} is not within the scope of {p}")
    extra = [x for x in child.permissions if x not in parent.permissions]
    if extra:
        raise KstarRefusal("DELEGATION_PERMISSIONS_WIDENED", f"{c} holds {len(extra)} permission(s) {p} does not")
    if parent.expires_at is not None and (
        child.expires_at is None or iso_to_ms(child.expires_at) > iso_to_ms(parent.expires_at)
    ):
        raise KstarRefusal("DELEGATION_EXPIRY_BEYOND_PARENT", f"{c} would outlive {p}")


def check_new_token(
    token: ControlToken, parents: Mapping[str, ControlToken], types: Mapping[str, TokenType], at_ms: int
) -> None:
    """What storing a token needs (F-12, X-22); ``parents`` holds the tokens of its chain that exist."""
    if not signature_ok(token):
        raise KstarRefusal("TOKEN_BAD_SIGNATURE", "Invalid signature")
    ttype = types.get(token.type)
    if ttype is None:
        raise KstarRefusal("TOKEN_UNKNOWN_TYPE", "no token type of that name is registered")
    if not scope_matches_pattern(token.scope, ttype.scope_pattern):
        raise KstarRefusal("TOKEN_SCOPE_PATTERN", f"scope does not fit {ttype.name}'s pattern {ttype.scope_pattern!r}")
    missing = [x for x in ttype.required_permissions if x not in token.permissions]
    if missing:
        raise KstarRefusal("TOKEN_PERMISSIONS_MISSING", f"a {ttype.name} token needs {', '.join(missing)}")
    if token.type == "session" and token.expires_at is None:
        raise KstarRefusal("TOKEN_EXPIRY_REQUIRED", "a session token needs expires_at")
    chain = token.delegation_chain
    if token.lineage_hash != lineage_hash(chain):
        raise KstarRefusal("TOKEN_LINEAGE_MISMATCH", "lineage_hash is not the hash of delegation_chain")
    if token.token_id in chain or len(set(chain)) != len(chain):
        raise KstarRefusal("DELEGATION_CHAIN_BROKEN", "a token appears twice in its own delegation chain")
    for i, pid in enumerate(chain):
        parent = parents.get(pid)
        if parent is None:
            raise KstarRefusal("DELEGATION_PARENT_UNKNOWN", f"delegation_chain[{i}] is not stored")
        if parent.revoked:
            raise KstarRefusal("DELEGATION_PARENT_REVOKED", f"delegation_chain[{i}] is revoked")
        if is_expired(parent, at_ms):
            raise KstarRefusal("DELEGATION_PARENT_EXPIRED", f"delegation_chain[{i}] has expired")
    child = token
    for i, pid in enumerate(chain):
        parent = parents[pid]
        if parent.delegation_chain != chain[i + 1 :]:  # the chain must be the parent's own, extended by one
            raise KstarRefusal("DELEGATION_CHAIN_BROKEN", f"the chain after delegation_chain[{i}] is not its own chain")
        _check_link(parent, child, i)
        child = parent


@dataclass(frozen=True)
class Verification:
    valid: bool
    reason: str | None
    code: str | None


def _refused(code: str, reason: str) -> Verification:
    return Verification(False, reason, code)


def verify(token: ControlToken | None, scope: str, at_ms: int, ancestors: Mapping[str, ControlToken]) -> Verification:
    """F-13's checks in the seed's order, then the chain (X-22): revoked, expired, then missing ancestors."""
    if token is None:
        return _refused("TOKEN_NOT_FOUND", "Token not found")
    if token.revoked:
        return _refused("TOKEN_REVOKED", "Token revoked")
    if is_expired(token, at_ms):
        return _refused("TOKEN_EXPIRED", "Token expired")
    if not scope_covers(token.scope, scope):
        return _refused("TOKEN_SCOPE_MISMATCH", "Scope mismatch")
    chain = [ancestors.get(pid) for pid in token.delegation_chain]
    if any(a is not None and a.revoked for a in chain):
        return _refused("TOKEN_ANCESTOR_REVOKED", "Ancestor token revoked")
    if any(a is not None and is_expired(a, at_ms) for a in chain):
        return _refused("TOKEN_ANCESTOR_EXPIRED", "Ancestor token expired")
    if any(a is None for a in chain):  # cannot tell whether it was revoked: fail closed
        return _refused("TOKEN_ANCESTOR_UNKNOWN", "Ancestor token not found")
    return Verification(True, None, None)


def lineage(token_id: str, tokens: Mapping[str, ControlToken]) -> list[ControlToken]:
    """F-15: ``[token]`` then its ancestors in chain order (nearest first), missing ones skipped; unknown -> []."""
    token = tokens.get(token_id)
    if token is None:
        return []
    return [token, *(tokens[pid] for pid in token.delegation_chain if pid in tokens)]


def revoke(token: ControlToken, reason: str, at_iso: str) -> ControlToken:
    """The token revoked at ``at_iso``; a revoked token is returned unchanged (the first revocation stands)."""
    if token.revoked:
        return token
    if not isinstance(reason, str) or not reason.strip() or len(reason) > MAX_TEXT:
        raise KstarRefusal("KSTAR_INVALID_RECORD", f"revocation_reason: a non-empty string of at most {MAX_TEXT}")
    try:
        clean_text(reason)
    except ValueError as exc:
        raise KstarRefusal("KSTAR_INVALID_RECORD", f"revocation_reason: {exc}") from None
    return token.model_copy(update={"revoked": True, "revoked_at": normalise_time(at_iso), "revocation_reason": reason})
