"""Audit trail: one row per inbound record, accepted or rejected, with trace metadata.

Rows are keyed by the inbound record's position, so re-delivered copies change nothing;
each row also names the output record, which consistency waits use to find their way.
"""

from __future__ import annotations

import psycopg

from contracts.avro import ContractError, decode_record, decode_rejection, envelope_of
from contracts.header_bytes import read_header
from contracts.topics import TopicNames
from governance.identity import Verifier
from governance.signing import verify_system_output
from projections.read_models import DigestTable, Table, copy_insert, schema_ddl, tenant_table
from streams.records import LogRecord

SYSTEM_OUTPUTS = ("decision", "fact")  # written by the governance processor, checked against its key
SYSTEM_TENANT = "_system"  # rows whose tenant could not be read (garbage bytes)

_EVENTS = Table(
    "events", (
        ("tenant", "text NOT NULL"), ("source_topic", "text NOT NULL"), ("source_partition", "int NOT NULL"),
        ("source_offset", "bigint NOT NULL"), ("outcome", "text NOT NULL CHECK (outcome IN ('ACCEPTED', 'REJECTED'))"),
        ("reason_code", "text"), ("detail", "text"), ("type", "text"), ("trace_id", "text"), ("claw_id", "text"),
        ("instance_id", "text"), ("idempotency_key", "text"), ("event_id", "text"), ("envelope_ts", "bigint"),
        ("log_time", "bigint NOT NULL"), ("output_topic", "text NOT NULL"), ("output_partition", "int NOT NULL"),
        ("output_offset", "bigint NOT NULL"), ("stage", "text"),
        ("projected_at", "timestamptz NOT NULL DEFAULT clock_timestamp()"),
    ), ("source_topic", "source_partition", "source_offset"), wall_clock=("projected_at",),
)  # fmt: skip
_COLUMNS = _EVENTS.names


class AuditProjection:
    name: str = "audit"
    tables: tuple[DigestTable, ...] = (_EVENTS.digest(),)

    def __init__(self, extra_topics: tuple[str, ...] = (), output_verifier: Verifier | None = None) -> None:
        self._extra = extra_topics
        self.output_verifier = output_verifier  # decisions and facts must carry the processor's signature

    def topics(self, names: TopicNames) -> list[str]:
        claw_types = [names.type_of(t) for t in names.gate_inputs()]
        governed = [names.inbound("decision"), names.inbound("fact")]  # written by the governance processor
        return [names.accepted(t) for t in claw_types if t] + [names.rejected, *governed, *self._extra]

    def ddl(self, schema: str) -> list[str]:
        return [
            *schema_ddl(schema),
            _EVENTS.create(schema),
            f"CREATE INDEX events_trace ON {schema}.events (tenant, trace_id)",
            # Why a write was refused, looked up by its eventId (KMMS, CAML, KMP, KSTAR write paths); only
            # refusals are in it, so an accepted record costs no entry here (migration 21).
            f"CREATE INDEX events_refused ON {schema}.events (tenant, event_id) WHERE outcome = 'REJECTED'",
            *tenant_table(schema, "events"),
        ]

    def fold(self, cur: psycopg.Cursor[tuple[object, ...]], schema: str, records: list[LogRecord]) -> None:
        copy_insert(cur, schema, "events", _COLUMNS, [self._row(rec) for rec in records])

    def _row(self, rec: LogRecord) -> tuple[object, ...]:
        out = (rec.topic, rec.partition, rec.offset)
        assert rec.value is not None
        if rec.topic.endswith("rejected"):
            r = decode_rejection(rec.value)
            return (r.tenant or SYSTEM_TENANT, r.source_topic, r.source_partition, r.source_offset,
                    "REJECTED", r.reason_code, r.detail, r.type, r.trace_id, r.claw_id, r.instance_id,
                    r.idempotency_key, r.envelope_event_id, None, r.log_time, *out, r.processor)  # fmt: skip
        src = rec.source()
        src_topic, src_partition, src_offset = src.topic, src.partition, src.offset
        h = read_header(rec.value)
        if h is not None and h.type not in SYSTEM_OUTPUTS:  # behind the gate: the header is all it needs
            return (h.tenant, src_topic, src_partition, src_offset, "ACCEPTED", None, None, h.type, h.trace_id,
                    h.claw_id, h.instance_id, h.idempotency_key, h.event_id, h.timestamp, rec.log_time(), *out,
                    "gate")  # fmt: skip
        try:
            decoded = decode_record(rec.value)
            env = envelope_of(decoded)
        except ContractError as exc:  # cannot happen behind the gate; recorded, not fatal
            return (SYSTEM_TENANT, src_topic, src_partition, src_offset, "REJECTED", exc.code,
                    exc.detail, None, None, None, None, None, None, None, rec.log_time(), *out, "gate")  # fmt: skip
        outcome, code, detail = "ACCEPTED", None, None
        stage = "governance" if env.type in SYSTEM_OUTPUTS else "gate"
        if stage == "governance" and self.output_verifier is not None:
            try:
                verify_system_output(rec.value, self.output_verifier, (decoded, env))
            except ContractError as exc:  # written around the processor: shown, never trusted
                outcome, code, detail, stage = "REJECTED", exc.code, exc.detail, "audit"
        return (env.tenant, src_topic, src_partition, src_offset, outcome, code, detail, env.type,
                env.trace_id, env.claw_id, env.instance_id, env.idempotency_key, env.event_id,
                env.timestamp, rec.log_time(), *out, stage)  # fmt: skip
