"""A refused record's verdict and its ``hivemem.rejected`` record, as every stage writes it (the gate, the
votes and caml processors, ``processors.refusals``): bounded header fields, at most a slice of the
original, and the deterministic id of an output derived from one input record."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contracts.models import Envelope, Rejection
from contracts.positions import LogPosition

# A rejection must always fit in a Kafka record and a Postgres row, whatever it refuses.
ORIGINAL_LIMIT = 64 * 1024  # bytes of the refused record kept in the rejection
META_LIMIT = 256  # characters of each header field copied into the rejection
DETAIL_LIMIT = 1_000
_ID_NAMESPACE = uuid.UUID("5b0c8f0e-7d0a-4c58-9d1e-2f43a1f6c7a1")


def derived_event_id(pos: LogPosition) -> str:
    """Deterministic id of an output derived from one input record."""
    return str(uuid.uuid5(_ID_NAMESPACE, str(pos)))


@dataclass(frozen=True)
class InboundRecord:
    position: LogPosition
    log_time: int  # broker append time, ms: the gate's notion of "server time"
    key: bytes | None
    value: bytes | None


def bounded(value: object, limit: int = META_LIMIT) -> str | None:
    """A header value safe to copy into a rejection: text, no NUL, at most ``limit`` characters."""
    if value is None:
        return None
    text = str(value).replace("\x00", "\ufffd")
    text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates become '?'
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


@dataclass(frozen=True)
class RecordMeta:
    """What a rejection tells about the refused envelope, as far as it could be read."""

    tenant: str | None = None
    type: str | None = None
    trace_id: str | None = None
    claw_id: str | None = None
    instance_id: str | None = None
    idempotency_key: str | None = None
    event_id: str | None = None

    @classmethod
    def of_envelope(cls, env: Envelope) -> RecordMeta:
        return cls(env.tenant, env.type, env.trace_id, env.claw_id, env.instance_id, env.idempotency_key,
                   env.event_id)  # fmt: skip

    @classmethod
    def of_raw(cls, raw: Mapping[str, Any]) -> RecordMeta:
        """Best effort, from a record that decoded but may not validate: every field bounded."""

        def text(name: str) -> str | None:
            v = raw.get(name)
            return bounded(v) if isinstance(v, str) and v else None

        return cls(text("tenant"), text("type"), text("traceId"), text("clawId"), text("instanceId"),
                   text("idempotencyKey"), text("eventId"))  # fmt: skip


@dataclass(frozen=True)
class Reject:
    record: InboundRecord
    code: str
    detail: str
    meta: RecordMeta | None = None


def rejection(verdict: Reject, processor: str, *, keep_original: bool = True) -> Rejection:
    """The rejection record of a refused record; it always fits (bounded fields, and of an
    oversized original only a slice, with the whole record's size and SHA-256). Without
    ``keep_original`` it only names its source (a record already in the log, e.g. accepted.*)."""
    m = verdict.meta or RecordMeta()
    rec = verdict.record
    original = (rec.value or b"") if keep_original else b""
    return Rejection(
        event_id=derived_event_id(rec.position),
        reason_code=verdict.code,
        detail=bounded(verdict.detail, DETAIL_LIMIT) or "",
        processor=processor,
        source_topic=rec.position.topic,
        source_partition=rec.position.partition,
        source_offset=rec.position.offset,
        log_time=rec.log_time,
        tenant=m.tenant,
        type=m.type,
        trace_id=m.trace_id,
        claw_id=m.claw_id,
        instance_id=m.instance_id,
        idempotency_key=m.idempotency_key,
        envelope_event_id=m.event_id,
        original=original[:ORIGINAL_LIMIT],
        original_size=len(original) if keep_original else None,
        original_sha256=hashlib.sha256(original).hexdigest() if keep_original else None,
    )
