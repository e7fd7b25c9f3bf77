"""The gate's processing step, independent of the Kafka runtime that feeds it.

``GateCore.process(batch)`` turns inbound records into output records: accepted envelopes
go, bytes unchanged, to ``<prefix>accepted.<type>``; every refusal goes to ``<prefix>rejected``
with its reason code. Outputs keep the inbound partition number, so per-key order holds.
``GateDriver`` runs it without a broker (Kafka Streams' TopologyTestDriver, in small).

``identity`` records of a batch are judged first and their key changes stored before the
rest is checked, so a key registered earlier in the batch already verifies later records.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from contracts.avro import encode_rejection
from governance.gate import (
    Accept,
    GateConfig,
    InboundRecord,
    Position,
    Reject,
    Verdict,
    check,
    first_claims,
    rejection,
    settle,
)
from governance.keyring import Keys, identity_changes
from processors.claim_store import ClaimStore, InMemoryClaimStore
from processors.key_store import InMemoryKeyStore, KeyStore
from processors.records import LOG_TIME_HEADER, SRC_HEADER, OutRecord

PRUNE_EVERY = 200  # batches between prunes of expired replay claims


class GateCore:
    def __init__(self, cfg: GateConfig, store: ClaimStore, keys: KeyStore) -> None:
        # Deployment keys (cfg.keys) and the registered Ed25519 keys, through one resolver.
        self.cfg = dataclasses.replace(cfg, keys=Keys(cfg.keys, keys))
        self.store = store
        self.keys = keys
        self.outcomes: Counter[str] = Counter()
        self._batches = 0

    def process(self, batch: list[InboundRecord]) -> list[OutRecord]:
        if not batch:
            return []
        latest = max(r.log_time for r in batch)
        identity = [r for r in batch if self.cfg.topics.type_of(r.position.topic) == "identity"]
        rest = [r for r in batch if self.cfg.topics.type_of(r.position.topic) != "identity"]
        verdicts = [self._apply_identity(v) for v in self._judge(identity, latest)] + self._judge(rest, latest)
        outputs = [self._output(v) for v in verdicts]
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
            return Reject(verdict.record, changes.code, changes.detail, verdict.envelope)
        self.keys.put(changes)
        return verdict

    def _output(self, verdict: Accept | Reject) -> OutRecord:
        rec = verdict.record
        headers = ((SRC_HEADER, str(rec.position).encode()), (LOG_TIME_HEADER, str(rec.log_time).encode()))
        if isinstance(verdict, Accept):
            self.outcomes["ACCEPTED"] += 1
            assert rec.value is not None
            topic = self.cfg.topics.accepted(verdict.envelope.type)
            return OutRecord(topic, rec.position.partition, rec.key, rec.value, headers)
        self.outcomes[verdict.code] += 1
        value = encode_rejection(rejection(verdict, self.cfg.processor))
        return OutRecord(self.cfg.topics.rejected, rec.position.partition, rec.key, value, headers)


class GateDriver:
    """Feed records through the gate with an in-memory store; collect what it emits."""

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
            batch.append(InboundRecord(Position(topic, partition, off), log_time, key, value))
        out = self.core.process(batch)
        self.emitted += out
        return out
