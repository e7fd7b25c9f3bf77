"""A stage's refusal of an accepted record: the ``hivemem.rejected`` record every stage after the
gate writes the same way (the audit folds it as the record's verdict; its content is not copied)."""

from __future__ import annotations

import hashlib

from contracts.avro import ContractError, decode_record, encode_rejection
from contracts.models import Rejection
from contracts.topics import TopicNames
from governance.refusals import RecordMeta, derived_event_id
from streams.records import LogRecord, OutRecord


def stage_rejection(names: TopicNames, stage: str, rec: LogRecord, code: str, detail: str, *,
                    meta: RecordMeta | None = None, max_detail: int | None = 1000) -> OutRecord:  # fmt: skip
    """The refusal of ``rec`` by ``stage``. ``meta``: the record's envelope fields when the stage has already decoded
    it (else they are read from the record's bytes); ``max_detail``: where ``detail`` is cut (None: kept whole)."""
    m = meta if meta is not None else (meta_of(rec.value) or RecordMeta())
    value = rec.value or b""
    rej = Rejection(event_id=derived_event_id(rec.position), reason_code=code,
                    detail=detail if max_detail is None else detail[:max_detail],
                    processor=stage, source_topic=rec.topic, source_partition=rec.partition,
                    source_offset=rec.offset, log_time=rec.log_time(), tenant=m.tenant, type=m.type,
                    trace_id=m.trace_id, claw_id=m.claw_id, instance_id=m.instance_id,
                    idempotency_key=m.idempotency_key, envelope_event_id=m.event_id, original=b"",
                    original_size=len(value), original_sha256=hashlib.sha256(value).hexdigest())  # fmt: skip
    key = f"{m.tenant}/{m.type}:{m.event_id}".encode()
    return OutRecord(names.rejected, rec.partition, key, encode_rejection(rej))


def meta_of(value: bytes | None) -> RecordMeta | None:
    """Header fields of a record, as far as they decode, for a refusal that still names its trace."""
    try:
        return RecordMeta.of_raw(decode_record(value or b"").record)
    except (ContractError, AttributeError):
        return None
