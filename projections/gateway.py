"""The HTTP write gateway: JSON in, a validated signed envelope out to Kafka.

A caller either sends a complete signed envelope (``signature`` base64 over the Avro bytes),
or, holding a token bound to a claw, lets the gateway fill the header and sign with that
claw's deployment key. The tenant always comes from the token.
"""

from __future__ import annotations

import base64
import binascii
import time
import uuid
from collections.abc import Mapping
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from contracts.avro import encode_envelope, registry
from contracts.models import Envelope
from contracts.topics import CLAW_PUBLISHED, ENVELOPE_TYPES
from governance.identity import HMAC_PREFIX, DeploymentKeys, TenantPolicy, derive_deployment_key
from governance.signing import HmacSigner, sign_envelope
from projections.auth import Principal


class WritePosition(Protocol):
    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...


class Publisher(Protocol):
    def publish(self, env: Envelope, timeout: float = ...) -> WritePosition:
        """Publish and wait for the broker's ack; say where the record landed."""
        ...


class GatewayError(Exception):
    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail


class EnvelopeIn(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    type: str
    payload: dict[str, Any]
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=200)
    trace_id: str | None = Field(default=None, min_length=1, max_length=200)
    event_id: str | None = None
    timestamp: int | None = None
    claw_id: str | None = None
    instance_id: str | None = None
    tenant: str | None = None
    key_id: str | None = None
    schema_version: int | None = None
    signature: str | None = None  # base64


def build_envelope(body: EnvelopeIn, who: Principal, tenants: Mapping[str, TenantPolicy]) -> Envelope:
    if body.type not in ENVELOPE_TYPES or body.type not in CLAW_PUBLISHED:
        raise GatewayError(422, "UNKNOWN_TYPE", f"claws cannot publish type {body.type!r}")
    if body.tenant is not None and body.tenant != who.tenant:
        raise GatewayError(403, "TENANT_MISMATCH", "envelope tenant differs from the token's tenant")
    claw_id = body.claw_id or who.claw_id
    if claw_id is None:
        raise GatewayError(422, "MISSING_FIELD", "clawId is required when the token names no claw")
    if who.claw_id is not None and claw_id != who.claw_id:
        raise GatewayError(403, "CLAW_MISMATCH", "envelope clawId differs from the token's claw")
    policy = tenants.get(who.tenant)
    if policy is None:
        raise GatewayError(403, "UNKNOWN_TENANT", f"tenant {who.tenant!r} is not configured")
    event_id = body.event_id or str(uuid.uuid4())
    fields: dict[str, Any] = {
        "schema_version": body.schema_version or registry().latest(body.type).version,
        "type": body.type,
        "event_id": event_id,
        "trace_id": body.trace_id or event_id,
        "timestamp": body.timestamp if body.timestamp is not None else int(time.time() * 1000),
        "idempotency_key": body.idempotency_key or event_id,
        "claw_id": claw_id,
        "instance_id": body.instance_id or f"{claw_id}-http",
        "tenant": who.tenant,
        "key_id": body.key_id or HMAC_PREFIX + next(iter(policy.operator_secrets), "none"),
        "payload": body.payload,
    }
    try:
        env = Envelope.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise GatewayError(422, "INVALID_FIELD", f"{where}: {first['msg']}") from exc
    if body.signature is None:
        if who.claw_id is None:
            raise GatewayError(422, "MISSING_FIELD", "signature is required unless the token is bound to a claw")
        secret = policy.operator_secrets.get(env.key_id[len(HMAC_PREFIX) :])
        if secret is None:
            raise GatewayError(422, "UNKNOWN_KEY", f"no operator secret for {env.key_id}")
        return sign_envelope(env, HmacSigner(env.key_id, derive_deployment_key(secret, who.tenant, claw_id)))
    try:
        signature = base64.b64decode(body.signature, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise GatewayError(422, "INVALID_FIELD", "signature is not base64") from exc
    signed = env.model_copy(update={"signature": signature})
    verifier = DeploymentKeys(tenants).resolve(who.tenant, claw_id, env.key_id)
    if verifier is None:
        raise GatewayError(401, "UNKNOWN_KEY", f"no key {env.key_id!r} for claw {claw_id}")
    if not verifier.verify(encode_envelope(env.unsigned()), signature):
        raise GatewayError(401, "BAD_SIGNATURE", "signature does not verify")
    return signed
