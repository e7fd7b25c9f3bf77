"""The gate processor: inbound envelopes in, verdicts out.

``GateCore.process(batch)`` turns inbound records into output records: accepted envelopes
go, bytes unchanged, to ``<prefix>accepted.<type>``; every refusal goes to ``<prefix>rejected``
with its reason code. Outputs keep the inbound partition number, so per-key order holds; accepted presence,
proposals and votes go to their tenant's partition instead (``contracts.topics.BY_TENANT``: one tenant's
governance is decided by one instance of a split governance processor), accepted episodes and erasures to
their memory's (``BY_MEMORY``: likewise for the kmms processor), which keeps per-key order too.
``GateProcessor`` runs it on the stream runtime (claims and keys in the batch's Postgres
transaction); ``GateDriver`` runs it without a broker (Kafka Streams' TopologyTestDriver,
in small) on in-memory stores. Both run the same algorithm.

``identity`` records of a batch are judged first and their key changes stored before the
rest is checked, so a key registered earlier in the batch already verifies later records.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence

from contracts.avro import encode_rejection
from contracts.caml_records import CamlEvent, decode_caml
from contracts.models import Envelope, EpisodePayload, ErasurePayload
from contracts.positions import LogPosition
from contracts.topics import BY_MEMORY, BY_TENANT, memory_partition, tenant_partition
from governance.gate.checks import Accept, GateConfig, Verdict, check, first_claims, settle
from governance.keyring import Keys, identity_changes
from governance.refusals import InboundRecord, RecordMeta, Reject, rejection
from processors.gate.claim_store import ClaimStore, InMemoryClaimStore, PostgresClaimStore
from processors.gate.key_store import InMemoryKeyStore, KeyStore, PostgresKeyStore
from processors.gate.suspension_store import InMemorySuspensionStore, PostgresSuspensionStore, SuspensionStore
from processors.refusals import meta_of
from streams.offsets import Conn
from streams.processor import PROCESSING_ERROR, Failure
from streams.records import LOG_TIME_HEADER, SRC_HEADER, LogRecord, OutRecord

PRUNE_EVERY = 200  # batches between prunes of expired replay claims
NAME = "gate"


class GateCore:
    def __init__(self, cfg: GateConfig, store: ClaimStore, keys: KeyStore) -> None:
        # Deployment keys (cfg.keys) and the registered Ed25519 keys, through one resolver.
        self.cfg = dataclasses.replace(cfg, keys=Keys(cfg.keys, keys))
        self.store = store
        self.keys = keys
        self._batches = 0

    def process(self, batch: Sequence[InboundRecord]) -> list[OutRecord]:
        if not batch:
            return []
        latest = max(r.log_time for r in batch)
        identity = [r for r in batch if self.cfg.topics.type_of(r.position.topic) == "identity"]
        rest = [r for r in batch if self.cfg.topics.type_of(r.position.topic) != "identity"]
        verdicts = [self._apply_identity(v) for v in self._judge(identity, latest)] + self._judge(rest, latest)
        outputs = [self.output(v) for v in verdicts]
        self._batches += 1
        if self._batches % PRUNE_EVERY == 0:
            self.store.prune(latest)
        return outputs

    def _judge(self, records: list[InboundRecord], latest: int) -> list[Verdict]:
        if not records:
            return []
        verdicts = [check(r, self.cfg) for r in records]
        owners = self.store.claim(first_claims(verdicts), latest)
        return [settle(v, owners) for v in verdicts]

    def _apply_identity(self, verdict: Verdict) -> Verdict:
        if isinstance(verdict, Reject):
            return verdict
        changes = identity_changes(verdict.envelope, verdict.record.log_time, self.keys)
        if not isinstance(changes, list):
            return Reject(verdict.record, changes.code, changes.detail, RecordMeta.of_envelope(verdict.envelope))
        self.keys.put(changes)
        return verdict

    def output(self, verdict: Accept | Reject) -> OutRecord:
        rec = verdict.record
        headers = ((SRC_HEADER, rec.position.encode()), (LOG_TIME_HEADER, str(rec.log_time).encode()))
        if isinstance(verdict, Accept):
            assert rec.value is not None
            env = verdict.envelope
            topic = self.cfg.topics.accepted(env.type)
            return OutRecord(topic, accepted_partition(env, rec.position.partition), rec.key, rec.value, headers)
        value = encode_rejection(rejection(verdict, self.cfg.processor))
        return OutRecord(self.cfg.topics.rejected, rec.position.partition, rec.key, value, headers)


def accepted_partition(env: Envelope, inbound: int) -> int:
    """Where an accepted envelope goes: its tenant's partition (governance inputs), its memory's (episodes,
    erasures), else the partition it was read from."""
    if env.type in BY_TENANT:
        return tenant_partition(env.tenant)
    if env.type in BY_MEMORY and isinstance(env.payload, EpisodePayload | ErasurePayload):
        return memory_partition(env.tenant, env.claw_id, env.payload.user_id)
    return inbound


def inbound(r: LogRecord) -> InboundRecord:
    return InboundRecord(r.position, r.timestamp, r.key, r.value)


class GateProcessor:
    """The gate on the stream runtime; its claims, keys and suspensions live in the batch's
    transaction. It also reads ``hivemem.caml.status``: deployments suspended at run time."""

    name = NAME

    # Its state is per record, in Postgres (claims with a primary key, keys, suspensions): its partitions
    # may be split over instances (streams.group, HIVEMEM_INSTANCE).
    parallel = True

    def __init__(self, cfg: GateConfig) -> None:
        self.cfg = cfg
        self.suspensions: SuspensionStore = InMemorySuspensionStore()
        self.core = GateCore(dataclasses.replace(cfg, suspensions=self.suspensions), InMemoryClaimStore(),
                             InMemoryKeyStore())  # fmt: skip

    def input_topics(self) -> list[str]:
        return [*self.cfg.topics.gate_inputs(), self.cfg.topics.caml_status]

    def open(self, conn: Conn) -> None:
        self.suspensions = PostgresSuspensionStore(conn)
        self.core = GateCore(dataclasses.replace(self.cfg, suspensions=self.suspensions), PostgresClaimStore(conn),
                             PostgresKeyStore(conn))  # fmt: skip

    def process(self, records: Sequence[LogRecord], now_ms: int) -> list[OutRecord]:
        status = self.cfg.topics.caml_status
        for r in records:
            if r.topic == status:  # applied before the batch's envelopes are judged
                ev = decode_caml(r.value or b"", CamlEvent)
                if ev.kind in ("DEPLOYMENT_SUSPENDED", "DEPLOYMENT_REINSTATED"):
                    self.suspensions.set(ev.tenant, ev.claw_id, ev.kind == "DEPLOYMENT_SUSPENDED", r.log_time())
        return self.core.process([inbound(r) for r in records if r.topic != status])

    def refuse(self, failure: Failure) -> list[OutRecord]:
        if failure.record.topic == self.cfg.topics.caml_status:
            return []  # not an envelope: recorded in processing_failures, nothing to refuse
        rec = inbound(failure.record)
        return [self.core.output(Reject(rec, PROCESSING_ERROR, failure.detail, meta_of(rec.value)))]


class GateDriver:
    """Feed records through the gate with in-memory stores; collect what it emits."""

    def __init__(self, cfg: GateConfig) -> None:
        self.core = GateCore(cfg, InMemoryClaimStore(), InMemoryKeyStore())
        self.emitted: list[OutRecord] = []
        self._offsets: Counter[tuple[str, int]] = Counter()

    def pipe(self, topic: str, key: bytes | None, value: bytes | None, log_time: int, partition: int = 0) -> OutRecord:
        return self.pipe_batch([(topic, key, value, log_time, partition)])[0]

    def pipe_batch(self, items: list[tuple[str, bytes | None, bytes | None, int, int]]) -> list[OutRecord]:
        batch = []
        for topic, key, value, log_time, partition in items:
            off = self._offsets[(topic, partition)]
            self._offsets[(topic, partition)] += 1
            batch.append(InboundRecord(LogPosition(topic, partition, off), log_time, key, value))
        return self.redeliver(batch)

    def redeliver(self, batch: list[InboundRecord]) -> list[OutRecord]:
        """Process records again at their positions (as after a crash before the commit)."""
        out = self.core.process(batch)
        self.emitted += out
        return out
