"""The governance processor's step: accepted records in, encoded outputs out.

Wraps the pure rules (``governance.voting``) with decoding and encoding. Outputs are
deterministic: a decision's eventId derives from its proposal, a fact's from its key and
version, a refusal's from the refused record's position, and the envelopes are signed with
the processor's own (deterministic HMAC) key. A redone step therefore yields the same bytes.
"""

from __future__ import annotations

import logging
import uuid
import zlib

from contracts.avro import ContractError, decode_envelope, encode_envelope, encode_rejection, registry
from contracts.models import DecisionPayload, Envelope, FactPayload, Rejection
from contracts.topics import DEFAULT_PARTITIONS, TopicNames, partition_key
from governance.gate import Position, derived_event_id
from governance.signing import SYSTEM_CLAW, Signer, sign_envelope
from governance.voting import DecisionOut, FactOut, GovernanceState, Output, Ref, Refusal
from processors.governance_store import NewOutput
from projections.log_records import LogRecord

PROCESSOR = "governance"
INPUT_TYPES = ("presence", "proposal", "vote")  # also the order a batch is applied in
_NS = uuid.UUID("0f7f1f64-4a8e-4c1b-9a55-3d0c7f4e2b11")
log = logging.getLogger("hivemem.governance")


def output_partition(key: bytes) -> int:
    return zlib.crc32(key) % DEFAULT_PARTITIONS


class GovernanceCore:
    def __init__(self, names: TopicNames, signer: Signer) -> None:
        self.names = names
        self.signer = signer

    def input_topics(self) -> list[str]:
        return [self.names.accepted(t) for t in INPUT_TYPES]

    def apply(self, gs: GovernanceState, records: list[LogRecord]) -> list[NewOutput]:
        rank = {self.names.accepted(t): i for i, t in enumerate(INPUT_TYPES)}
        ordered = sorted(records, key=lambda r: (rank.get(r.topic, 9), r.log_time(), r.topic, r.partition, r.offset))
        outs: list[Output] = []
        for rec in ordered:
            try:
                env = decode_envelope(rec.value or b"")
            except ContractError as exc:  # the gate lets nothing like this through
                log.error("skipping undecodable record %s/%d/%d: %s", rec.topic, rec.partition, rec.offset, exc)
                continue
            outs += gs.apply(env, Ref.of(env, rec.topic, rec.partition, rec.offset, rec.log_time()))
        return [self.encode(o) for o in outs]

    def tick(self, gs: GovernanceState, now_ms: int) -> list[NewOutput]:
        return [self.encode(o) for o in gs.tick(now_ms)]

    def encode(self, o: Output) -> NewOutput:
        if isinstance(o, Refusal):
            return self._refusal(o)
        if isinstance(o, DecisionOut):
            env = self._envelope("decision", o.tenant, o.trace_id, o.payload.decided_at,
                                 f"decision:{o.payload.proposal_id}", o.payload)  # fmt: skip
        else:
            assert isinstance(o, FactOut)
            env = self._envelope("fact", o.tenant, o.trace_id, o.payload.valid_from,
                                 f"fact:{o.payload.fact_key}:v{o.payload.version}", o.payload)  # fmt: skip
        key = partition_key(env.tenant, env.aggregate)
        return NewOutput(env.event_id, self.names.inbound(env.type), output_partition(key), key, encode_envelope(env))

    def _envelope(self, kind: str, tenant: str, trace_id: str, at: int, idem: str,
                  payload: DecisionPayload | FactPayload) -> Envelope:  # fmt: skip
        env = Envelope(schema_version=registry().latest(kind).version, type=kind,  # type: ignore[arg-type]
                       event_id=str(uuid.uuid5(_NS, f"{tenant}|{idem}")), trace_id=trace_id, timestamp=at,
                       idempotency_key=idem, claw_id=SYSTEM_CLAW, instance_id=PROCESSOR, tenant=tenant,
                       key_id=self.signer.key_id, payload=payload)  # fmt: skip
        return sign_envelope(env, self.signer)

    def _refusal(self, o: Refusal) -> NewOutput:
        r = o.ref
        event_id = derived_event_id(Position(r.topic, r.partition, r.offset))
        rej = Rejection(event_id=event_id, reason_code=o.code, detail=o.detail, processor=PROCESSOR,
                        source_topic=r.topic, source_partition=r.partition, source_offset=r.offset,
                        log_time=r.log_time, tenant=r.tenant, type=r.type, trace_id=r.trace_id, claw_id=r.claw_id,
                        instance_id=r.instance_id, idempotency_key=r.idempotency_key,
                        envelope_event_id=r.event_id)  # fmt: skip
        key = f"{r.tenant}/{r.type}:{r.event_id}".encode()
        return NewOutput(event_id, self.names.rejected, r.partition, key, encode_rejection(rej))
