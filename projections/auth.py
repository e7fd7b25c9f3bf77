"""Bearer tokens: signed (HS256 JWT), expiring, bound to a tenant and optionally a claw.

The tenant of every request comes from here, never from a parameter the caller picks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import jwt

from contracts.models import MAX_ID

ISSUER = "hivemem"


class AuthError(Exception):
    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


@dataclass(frozen=True)
class Principal:
    tenant: str
    subject: str
    claw_id: str | None
    # the token's exp (Unix seconds): a dashboard socket closes then; not part of who it is
    expires_at: int | None = field(default=None, compare=False)


def mint_token(secret: bytes, tenant: str, subject: str, claw_id: str | None = None, ttl_s: int = 3600) -> str:
    now = int(time.time())
    claims: dict[str, object] = {"iss": ISSUER, "sub": subject, "tenant": tenant, "iat": now, "exp": now + ttl_s}
    if claw_id:
        claims["claw"] = claw_id
    return jwt.encode(claims, secret, algorithm="HS256")


def verify_token(secret: bytes, header: str | None) -> Principal:
    if not header or not header.lower().startswith("bearer "):
        raise AuthError("AUTH_MISSING", "send Authorization: Bearer <token>")
    try:
        claims = jwt.decode(header[7:].strip(), secret, algorithms=["HS256"], issuer=ISSUER,
                            options={"require": ["exp", "tenant", "sub"]})  # fmt: skip
    except jwt.ExpiredSignatureError as exc:
        raise AuthError("AUTH_EXPIRED", "token has expired") from exc
    except jwt.InvalidTokenError as exc:
        raise AuthError("AUTH_INVALID", f"token is not valid: {type(exc).__name__}") from exc
    tenant, subject, claw = claims.get("tenant"), claims.get("sub"), claims.get("claw")
    # Signed by us, but claims become Postgres settings, key derivations and envelope fields:
    # the same bounds as an envelope's ids (contracts.models.Id), or the token is not valid.
    if not (_id_ok(tenant) and _id_ok(subject) and (claw is None or _id_ok(claw))):
        raise AuthError("AUTH_INVALID", "token is not valid: tenant, sub and claw must be ids of 1-256 characters")
    exp = claims.get("exp")
    return Principal(tenant=str(tenant), subject=str(subject), claw_id=str(claw) if claw is not None else None,
                     expires_at=int(exp) if isinstance(exp, int | float) else None)  # fmt: skip


def _id_ok(value: object) -> bool:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_ID or "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
