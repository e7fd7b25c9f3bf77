"""The gate's processing step, independent of the Kafka runtime that feeds it.

``GateCore.process(batch)`` turns inbound records into output records: accepted envelopes
go, bytes unchanged, to ``<prefix>accepted.<type>``; every refusal goes to ``<prefix>rejected``
with its reason code. Outputs keep the inbound partition number, so per-key order holds.
``GateDriver`` runs it without a broker (Kafka Streams' TopologyTestDriver, in small).
"""

from __future__ import annotations

from collections import Counter

from contracts.avro import encode_rejection
from governance.gate import (
    Accept,
    GateConfig,
    InboundRecord,
    Position,
    Reject,
    check,
    first_claims,
    rejection,
    settle,
)
from processors.claim_store import ClaimStore, InMemoryClaimStore
from processors.records import LOG_TIME_HEADER, SRC_HEADER, OutRecord

PRUNE_EVERY = 200  # batches between prunes of expired replay claims


class GateCore:
    def __init__(self, cfg: GateConfig, store: ClaimStore) -> None:
        self.cfg = cfg
        self.store = store
        self.outcomes: Counter[str] = Counter()
        self._batches = 0

    def process(self, batch: list[InboundRecord]) -> list[OutRecord]:
        if not batch:
            return []
        verdicts = [check(r, self.cfg) for r in batch]
        latest = max(r.log_time for r in batch)
        owners = self.store.claim(first_claims(verdicts), latest)
        outputs = [self._output(settle(v, owners)) for v in verdicts]
        self._batches += 1
        if self._batches % PRUNE_EVERY == 0:
            self.store.prune(latest)
        return outputs

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
        self.core = GateCore(cfg, InMemoryClaimStore())
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
