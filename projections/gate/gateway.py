"""The HTTP write gateway: JSON in, a validated signed envelope out (``producers.envelopes``
builds and signs it; this module keeps the HTTP concerns: what the token allows, which key
signs, and which status and code each refusal gets). A refusal is a ``GatewayRefusal``, which the
HTTP layer answers in its one error shape (``projections.http.errors``).

A caller either sends a complete signed envelope (``signature`` base64 over the Avro bytes),
or, holding a token bound to a claw, lets the gateway fill the header and sign with that
claw's deployment key. The tenant always comes from the token.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from contracts.avro import ContractError, encode_envelope, signing_bytes, writer_schema
from contracts.models import MAX_ID, PAYLOAD_MODELS, Envelope, WireModel
from contracts.topics import CLAW_PUBLISHED
from governance.identity import HMAC_PREFIX, DeploymentKeys, TenantPolicy, derive_deployment_key
from governance.signing import HmacSigner, Signer
from producers.envelopes import build_envelope, known_schema_versions
from projections.auth import Principal

# librdkafka refuses records over message.max.bytes (1,000,000 by default); leave room for
# the key and the record overhead, so a write is refused here (413) rather than by Kafka (503).
MAX_RECORD_BYTES = 900_000
_ID = {"maxLength": MAX_ID, "minLength": 1}
_BASE64 = r"^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"


class GatewayRefusal(Exception):
    """Why the gateway will not publish an envelope: the HTTP status and stable code to answer with."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail


def describe_validation(errors: list[Any]) -> str:
    """``where: what`` of the first error of a pydantic/FastAPI validation failure."""
    first = errors[0] if errors else {}
    where = ".".join(str(p) for p in first.get("loc", ())) or "request"
    return f"{where}: {first.get('msg', 'invalid')}"


def _doc(**schema: Any) -> Any:
    """An optional field documented with the bounds the envelope model enforces: the check
    itself happens when the envelope is built, so a refusal says INVALID_FIELD."""
    return Field(default=None, json_schema_extra=schema)


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with its own ``$defs`` put in place: nested in a branch, ``#/$defs/...`` would point
    at the document's root, where they are not (payload models are not recursive)."""
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return walk(defs[ref.removeprefix("#/$defs/")])
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    out: dict[str, Any] = walk(schema)
    return out


def _per_type(schema: dict[str, Any]) -> None:
    """OpenAPI: the payload (and the schema versions) ``type`` selects, one branch per type. The
    gateway checks this when it builds the envelope (INVALID_FIELD); the document says it upfront."""
    branches: list[Any] = []
    for t in sorted(CLAW_PUBLISHED):
        payload = _inlined(PAYLOAD_MODELS[t].model_json_schema(by_alias=True))
        for prop in payload["properties"].values():
            if prop.get("format") == "binary":  # bytes travel in JSON as strings (UTF-8)
                del prop["format"]
        versions: list[Any] = [*known_schema_versions(t), None]  # None: the latest
        branches.append({"properties": {"type": {"const": t}, "payload": payload,
                                        "schemaVersion": {"enum": versions}}})  # fmt: skip
    schema["oneOf"] = branches


class EnvelopeIn(BaseModel):
    """An envelope to publish. Only ``type`` and ``payload`` are required; see docs/http-api.md."""

    # strict: JSON types as declared (no true for 1, no "1" for 1), like the payload below.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True,
                              json_schema_extra=_per_type)  # fmt: skip

    type: str = Field(json_schema_extra={"enum": list(sorted(CLAW_PUBLISHED))})
    payload: dict[str, Any] = Field(description="the type's payload (contracts/schemas/<type>), camelCase fields")
    idempotency_key: str | None = _doc(**_ID)
    trace_id: str | None = _doc(**_ID)
    event_id: str | None = _doc(**_ID)
    timestamp: int | None = _doc(minimum=-(2**63), maximum=2**63 - 1, description="ms since the epoch")
    claw_id: str | None = _doc(**_ID)
    instance_id: str | None = _doc(**_ID)
    tenant: str | None = _doc(**_ID)
    key_id: str | None = _doc(**_ID)
    schema_version: int | None = _doc(minimum=1, description="a version the registry knows; default the latest")
    signature: str | None = _doc(
        maxLength=684, pattern=_BASE64, description="base64 of the signature (at most 512 bytes) over the Avro bytes"
    )


def _invalid(exc: ValidationError, prefix: str = "") -> GatewayRefusal:
    return GatewayRefusal(422, "INVALID_FIELD", prefix + describe_validation(list(exc.errors())))


def _payload(envelope_type: str, payload: dict[str, Any]) -> WireModel:
    """The payload as its model, validated in strict JSON mode: the contracts' models are lax
    for Python callers (``True`` would pass as ``1``), but an HTTP body must carry the JSON
    types the schema declares. Bytes fields are JSON strings."""
    try:
        return PAYLOAD_MODELS[envelope_type].model_validate_json(json.dumps(payload), strict=True)
    except ValidationError as exc:
        if any(e["type"] == "json_invalid" for e in exc.errors()):  # json.dumps escaped a lone surrogate
            raise GatewayRefusal(
                422, "INVALID_FIELD", "payload: strings must be valid Unicode (no lone surrogates)"
            ) from exc
        raise _invalid(exc, "payload.") from exc


def envelope_from_request(body: EnvelopeIn, who: Principal, tenants: Mapping[str, TenantPolicy]) -> Envelope:
    """The envelope to publish, or a ``GatewayRefusal`` saying why not."""
    if body.type not in CLAW_PUBLISHED:
        raise GatewayRefusal(422, "UNKNOWN_TYPE", "claws cannot publish envelopes of that type")
    if body.tenant is not None and body.tenant != who.tenant:
        raise GatewayRefusal(403, "TENANT_MISMATCH", "envelope tenant differs from the token's tenant")
    # `is None`, not falsiness: an empty string given is refused as INVALID_FIELD, never replaced.
    claw_id = who.claw_id if body.claw_id is None else body.claw_id
    if claw_id is None:
        raise GatewayRefusal(422, "MISSING_FIELD", "clawId is required when the token names no claw")
    if who.claw_id is not None and claw_id != who.claw_id:
        raise GatewayRefusal(403, "CLAW_MISMATCH", "envelope clawId differs from the token's claw")
    policy = tenants.get(who.tenant)
    if policy is None:
        raise GatewayRefusal(403, "UNKNOWN_TENANT", "the token's tenant is not configured")
    key_id = HMAC_PREFIX + next(iter(policy.operator_secrets), "none") if body.key_id is None else body.key_id
    signer: Signer | None = None
    signature = b""
    if body.signature is None:
        if who.claw_id is None:
            raise GatewayRefusal(422, "MISSING_FIELD", "signature is required unless the token is bound to a claw")
        secret = policy.operator_secrets.get(key_id[len(HMAC_PREFIX) :]) if key_id.startswith(HMAC_PREFIX) else None
        if secret is None:
            raise GatewayRefusal(422, "UNKNOWN_KEY", "no operator secret for that keyId")
        # claw_id is the token's, already checked to be a clean id (projections.auth).
        signer = HmacSigner(key_id, derive_deployment_key(secret, who.tenant, claw_id))
    else:
        try:
            signature = base64.b64decode(body.signature, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise GatewayRefusal(422, "INVALID_FIELD", "signature is not base64") from exc
    payload = _payload(body.type, body.payload)
    instance_id = f"{claw_id}-http" if body.instance_id is None else body.instance_id
    try:
        env = build_envelope(body.type, payload, tenant=who.tenant, claw_id=claw_id, instance_id=instance_id,
                             signer=signer, key_id=key_id, signature=signature, event_id=body.event_id,
                             trace_id=body.trace_id, idempotency_key=body.idempotency_key,
                             timestamp_ms=body.timestamp, schema_version=body.schema_version)  # fmt: skip
    except ValidationError as exc:
        raise _invalid(exc) from exc
    except ContractError as exc:
        raise GatewayRefusal(422, exc.code, exc.detail) from exc
    size = len(encode_envelope(env))
    if size > MAX_RECORD_BYTES:
        raise GatewayRefusal(
            413, "PAYLOAD_TOO_LARGE", f"the envelope encodes to {size} bytes; at most {MAX_RECORD_BYTES}"
        )
    if signer is None:
        verifier = DeploymentKeys(tenants).resolve(who.tenant, claw_id, env.key_id)
        if verifier is None:
            raise GatewayRefusal(401, "UNKNOWN_KEY", "the claw has no key with that keyId")
        if not verifier.verify(signing_bytes(writer_schema(env), env.unsigned().to_wire()), signature):
            raise GatewayRefusal(401, "BAD_SIGNATURE", "signature does not verify")
    return env
