"""The governance processor: accepted presence, proposals and votes in; decisions, facts
and refusals out.

``GovernanceCore`` wraps the pure rules (``governance.votes.voting``) with decoding and encoding.
Outputs are deterministic: a decision's eventId derives from its proposal, a fact's from its
key and version, a refusal's from the refused record's position, and the envelopes are signed
with the processor's own (deterministic HMAC) key, so a redone step yields the same bytes.
``GovernanceProcessor`` runs it on the stream runtime with its state in Postgres;
``GovernanceDriver`` runs the same code without a broker on the in-memory store.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Sequence

from contracts.avro import decode_envelope, encode_rejection, registry
from contracts.models import DecisionPayload, Envelope, FactPayload, Rejection
from contracts.positions import LogPosition
from contracts.topics import TopicNames, key_partition, partition_key, tenant_partition
from governance.refusals import InboundRecord, RecordMeta, Reject, derived_event_id, rejection
from governance.signing import SYSTEM_CLAW, Signer, encode_signed
from governance.votes.voting import DecisionOut, FactOut, GovernanceState, Output, Ref, Refusal, VotingConfig
from processors.refusals import meta_of
from processors.votes.store import GovernanceStore, InMemoryGovernanceStore, PostgresGovernanceStore
from streams.offsets import Conn
from streams.processor import PROCESSING_ERROR, Failure
from streams.records import LogRecord, OutRecord

PROCESSOR = "governance"  # the stage named in its refusals
NAME = "governance-processor"  # its offsets, outbox, lock and progress; the read model is "governance"
INPUT_TYPES = ("presence", "proposal", "vote")  # also the order a batch is applied in
_NS = uuid.UUID("0f7f1f64-4a8e-4c1b-9a55-3d0c7f4e2b11")
log = logging.getLogger("hivemem.governance")


class GovernanceCore:
    def __init__(self, names: TopicNames, signer: Signer) -> None:
        self.names = names
        self.signer = signer

    def input_topics(self) -> list[str]:
        return [self.names.accepted(t) for t in INPUT_TYPES]

    def apply(self, gs: GovernanceState, records: Sequence[LogRecord]) -> list[OutRecord]:
        rank = {self.names.accepted(t): i for i, t in enumerate(INPUT_TYPES)}
        ordered = sorted(records, key=lambda r: (rank.get(r.topic, 9), r.log_time(), r.topic, r.partition, r.offset))
        outs: list[Output] = []
        for rec in ordered:
            # The gate lets nothing undecodable through; if it happens, the runtime refuses the
            # record with PROCESSING_ERROR rather than skipping it.
            env = decode_envelope(rec.value or b"")
            outs += gs.apply(env, Ref.of(env, rec.topic, rec.partition, rec.offset, rec.log_time()))
        return [self.encode(o) for o in outs]

    def tick(self, gs: GovernanceState, now_ms: int) -> list[OutRecord]:
        return [self.encode(o) for o in gs.tick(now_ms)]

    def encode(self, o: Output) -> OutRecord:
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
        return OutRecord(self.names.inbound(env.type), key_partition(key), key, encode_signed(env, self.signer))

    def _envelope(self, kind: str, tenant: str, trace_id: str, at: int, idem: str,
                  payload: DecisionPayload | FactPayload) -> Envelope:  # fmt: skip
        """The output envelope before its signature (``encode_signed`` adds key id and signature)."""
        return Envelope(schema_version=registry().latest(kind).version, type=kind,  # type: ignore[arg-type]
                        event_id=str(uuid.uuid5(_NS, f"{tenant}|{idem}")), trace_id=trace_id, timestamp=at,
                        idempotency_key=idem, claw_id=SYSTEM_CLAW, instance_id=PROCESSOR, tenant=tenant,
                        key_id=self.signer.key_id, payload=payload)  # fmt: skip

    def _refusal(self, o: Refusal) -> OutRecord:
        r = o.ref
        event_id = derived_event_id(LogPosition(r.topic, r.partition, r.offset))
        rej = Rejection(event_id=event_id, reason_code=o.code, detail=o.detail, processor=PROCESSOR,
                        source_topic=r.topic, source_partition=r.partition, source_offset=r.offset,
                        log_time=r.log_time, tenant=r.tenant, type=r.type, trace_id=r.trace_id, claw_id=r.claw_id,
                        instance_id=r.instance_id, idempotency_key=r.idempotency_key,
                        envelope_event_id=r.event_id)  # fmt: skip
        key = f"{r.tenant}/{r.type}:{r.event_id}".encode()
        return OutRecord(self.names.rejected, r.partition, key, encode_rejection(rej))

    def failed(self, failure: Failure) -> OutRecord:
        """PROCESSING_ERROR for an accepted record the rules could not take (a bug, never silent)."""
        rec = failure.record
        m = meta_of(rec.value) or RecordMeta()
        refused = Reject(InboundRecord(rec.position, rec.log_time(), rec.key, rec.value), PROCESSING_ERROR,
                         failure.detail, m)  # fmt: skip
        rej = rejection(refused, PROCESSOR, keep_original=False)
        key = f"{m.tenant}/{m.type}:{m.event_id}".encode()
        return OutRecord(self.names.rejected, rec.partition, key, encode_rejection(rej))


class GovernanceProcessor:
    """The governance step on the stream runtime: state in ``govproc`` (the batch's transaction).

    It may be split over instances (``HIVEMEM_INSTANCE``, ``streams.group``): its state is per tenant, and the
    gate writes a tenant's presence, proposals and votes to the tenant's partition of each input topic
    (``contracts.topics.BY_TENANT``), so an instance holding partition ``p`` of the three topics owns the
    tenants of ``p`` whole: their quorum (presence), proposals, votes, expiries and fact versions. It loads and
    ticks only those; a partition that moves is picked up with its state as the previous owner committed it.
    """

    name = NAME
    parallel = True
    copartitioned = True

    def __init__(self, cfg: VotingConfig, names: TopicNames, signer: Signer,
                 store: GovernanceStore | None = None) -> None:  # fmt: skip
        self.cfg = cfg
        self.core = GovernanceCore(names, signer)
        self.store: GovernanceStore = store or InMemoryGovernanceStore()
        self.owned: frozenset[int] | None = None  # the tenant partitions it owns; None: unsplit, every tenant
        self.state = self.store.load(cfg)

    def input_topics(self) -> list[str]:
        return self.core.input_topics()

    def owns(self, tenant: str) -> bool:
        return self.owned is None or tenant_partition(tenant) in self.owned

    def open(self, conn: Conn) -> None:
        self.store = PostgresGovernanceStore(conn)
        self.state = self.store.load(self.cfg, None if self.owned is None else self.owns)

    def partitions_changed(self, conn: Conn, held: frozenset[tuple[str, int]]) -> None:
        self.store = PostgresGovernanceStore(conn)
        self.hold(held)

    def hold(self, held: frozenset[tuple[str, int]]) -> None:
        """Own the tenants of the held partitions and load their state from the store."""
        # A tenant is owned when its partition of every input topic is held; the range assignor hands them out
        # together, so anything else is a misconfigured group: said, and only the complete ones are owned.
        by_topic = [{p for t, p in held if t == topic} for topic in self.input_topics()]
        owned = frozenset(set.intersection(*by_topic))
        if any(ps - owned for ps in by_topic):
            log.warning("%s holds partitions %s, not the same numbers on every input topic", NAME, sorted(held))
        self.owned = owned
        self.state = self.store.load(self.cfg, self.owns)

    def process(self, records: Sequence[LogRecord], now_ms: int) -> list[OutRecord]:
        outputs = self.core.apply(self.state, records) + self.core.tick(self.state, now_ms)
        self.store.save(self.state)
        return outputs

    def refuse(self, failure: Failure) -> list[OutRecord]:
        return [self.core.failed(failure)]


class GovernanceDriver:
    """Run the governance processor without a broker or a database; collect its outputs."""

    def __init__(self, cfg: VotingConfig, names: TopicNames, signer: Signer) -> None:
        self.processor = GovernanceProcessor(cfg, names, signer, InMemoryGovernanceStore())
        self.emitted: list[OutRecord] = []
        self._offsets: Counter[tuple[str, int]] = Counter()

    def pipe(self, topic: str, value: bytes, log_time: int, now_ms: int, partition: int = 0) -> list[OutRecord]:
        off = self._offsets[(topic, partition)]
        self._offsets[(topic, partition)] += 1
        out = self.processor.process([LogRecord(topic, partition, off, log_time, None, value)], now_ms)
        self.emitted += out
        return out

    def restart(self) -> None:
        """Forget the in-memory state and reload it from the store (as after a crash)."""
        self.processor.state = self.processor.store.load(self.processor.cfg)
