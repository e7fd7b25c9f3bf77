"""Building envelopes: one function turns a header and a payload into a validated, signed
``Envelope``, for claws (``ClawClient.build``) and the HTTP write gateway alike.

Everything a caller may get wrong is refused here, before anything is encoded or published:
field limits and types (``pydantic.ValidationError``, the gateway's ``INVALID_FIELD``), an
unknown type (``ContractError("UNKNOWN_TYPE")``) and a schema version the registry does not
know (``ContractError("SCHEMA_VERSION_MISMATCH")``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

from contracts.avro import ContractError, registry
from contracts.models import PAYLOAD_MODELS, Envelope, WireModel
from governance.signing import Signer, sign_envelope


def known_schema_versions(envelope_type: str) -> list[int]:
    return [sv.version for sv in registry().versions(envelope_type)]


def build_envelope(
    envelope_type: str,
    payload: WireModel | Mapping[str, Any],
    *,
    tenant: str,
    claw_id: str,
    instance_id: str,
    signer: Signer | None = None,
    key_id: str | None = None,
    signature: bytes = b"",
    event_id: str | None = None,
    trace_id: str | None = None,
    idempotency_key: str | None = None,
    timestamp_ms: int | None = None,
    schema_version: int | None = None,
) -> Envelope:
    """A validated envelope, signed by ``signer`` when one is given (its key id goes in the
    header); without one it carries ``key_id`` and ``signature`` as given (a caller that
    signed it itself). Defaults: a fresh event id, the event id as trace id and idempotency
    key, now as timestamp, the type's latest schema version."""
    if envelope_type not in PAYLOAD_MODELS:
        raise ContractError("UNKNOWN_TYPE", f"no envelope type {envelope_type!r}")
    known = known_schema_versions(envelope_type)
    version = known[-1] if schema_version is None else schema_version
    if version not in known:
        # Never rewritten to another version: the signature covers the bytes of the version named.
        raise ContractError("SCHEMA_VERSION_MISMATCH", f"{envelope_type} has schema versions {known}, not {version}")
    if signer is not None and signature:
        raise ValueError("give a signer or a signature, not both")
    # `is None`, not falsiness: an empty id given is refused by the model, never replaced.
    event = str(uuid.uuid4()) if event_id is None else event_id
    env = Envelope.model_validate(
        {
            "schema_version": version,
            "type": envelope_type,
            "event_id": event,
            "trace_id": event if trace_id is None else trace_id,
            "timestamp": int(time.time() * 1000) if timestamp_ms is None else timestamp_ms,
            "idempotency_key": event if idempotency_key is None else idempotency_key,
            "claw_id": claw_id,
            "instance_id": instance_id,
            "tenant": tenant,
            "key_id": signer.key_id if signer is not None else key_id,
            "signature": signature,
            "payload": payload if isinstance(payload, WireModel) else dict(payload),
        }
    )
    return sign_envelope(env, signer) if signer is not None else env
