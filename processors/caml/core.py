"""The caml processor: accepted observations and validations in; governed CAML events, audit
entries and refusals out (rules: ``governance/caml/engine.py``).

Outputs, all deterministic in their input position:
- ``hivemem.caml.events``: OBSERVATION_ACCEPTED, VALIDATION_RECORDED, OBSERVATION_PROMOTED,
  OBSERVATION_DEACTIVATED (keyed by the observation, so one partition holds an observation's
  whole story) and REPUTATION_CHANGED (keyed by the deployment, so its scores stay in order);
- ``hivemem.caml.status``: DEPLOYMENT_SUSPENDED (the gate reads it and refuses the claw);
- ``hivemem.caml.audit``: one entry per judged envelope (C-42), keyed by the deployment;
- ``hivemem.rejected``: the refusal with its reason code, stage ``caml``, and of the refused
  record only its size and SHA-256 — never its bytes (it may hold personal data).
It also reads ``hivemem.caml.status`` for the operators' reinstatements.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import Counter
from collections.abc import Mapping, Sequence

from contracts.avro import decode_envelope
from contracts.caml_records import CamlEvent, decode_caml, encode_caml
from contracts.models import Envelope, ObservationPayload, ValidationPayload
from contracts.topics import TopicNames, key_partition
from governance.caml.engine import CamlEngine, CamlState, Judged, Outcome, Scanner
from governance.caml.reputation import ReputationConfig
from governance.refusals import RecordMeta
from processors.caml.store import CamlStore, InMemoryCamlStore, PostgresCamlStore
from processors.refusals import stage_rejection
from streams.offsets import Conn
from streams.processor import PROCESSING_ERROR, Failure
from streams.records import LogRecord, OutRecord

NAME = "caml-processor"  # its offsets, outbox, lock and progress; the read model is "caml"
STAGE = "caml"  # the stage named in its refusals
log = logging.getLogger("hivemem.caml")


def event_key(ev: CamlEvent) -> bytes:
    if ev.kind == "REPUTATION_CHANGED" or ev.kind.startswith("DEPLOYMENT_"):
        return f"{ev.tenant}/claw:{ev.claw_id}".encode()
    oid = ev.observation.observation_id if ev.observation else ev.validation.observation_id if ev.validation else None
    return f"{ev.tenant}/observation:{oid or ev.observation_id}".encode()


class CamlCore:
    def __init__(self, names: TopicNames, engine: CamlEngine) -> None:
        self.names = names
        self.engine = engine

    def input_topics(self) -> list[str]:
        return [self.names.accepted("observation"), self.names.accepted("validation"), self.names.caml_status]

    def apply(self, st: CamlState, records: Sequence[LogRecord]) -> list[OutRecord]:
        # Log-time order across partitions, so a run over the same batch gives the same verdicts.
        ordered = sorted(records, key=lambda r: (r.log_time(), r.topic, r.partition, r.offset))
        outs: list[OutRecord] = []
        for rec in ordered:
            if rec.topic == self.names.caml_status:
                self._status(st, rec)
                continue
            started = time.perf_counter()
            value = rec.value or b""
            env = decode_envelope(value)
            j = Judged(env.tenant, env.claw_id, env.event_id, env.trace_id, rec.log_time(), str(rec.position),
                       hashlib.sha256(value).hexdigest())  # fmt: skip

            def latency(started: float = started) -> float:
                return round((time.perf_counter() - started) * 1000, 3)

            if isinstance(env.payload, ObservationPayload):
                outcome = self.engine.observe(st, j, env.payload, latency)
            elif isinstance(env.payload, ValidationPayload):
                outcome = self.engine.validate(st, j, env.payload, latency)
            else:  # the gate only forwards these two types here
                raise ValueError(f"caml cannot judge a {env.type} envelope")
            outs += self.encode(outcome, rec, env)
        return outs

    def _status(self, st: CamlState, rec: LogRecord) -> None:
        ev = decode_caml(rec.value or b"", CamlEvent)
        if ev.kind == "DEPLOYMENT_REINSTATED":
            self.engine.reinstate(st, ev.tenant, ev.claw_id, rec.log_time())
        # DEPLOYMENT_SUSPENDED is this processor's own output: its state already says so.

    def encode(self, o: Outcome, rec: LogRecord, env: Envelope) -> list[OutRecord]:
        outs: list[OutRecord] = []
        for ev in o.events:
            key = event_key(ev)
            topic = self.names.caml_status if ev.kind.startswith("DEPLOYMENT_") else self.names.caml_events
            outs.append(OutRecord(topic, key_partition(key), key, encode_caml(ev)))
        akey = f"{o.audit.tenant}/claw:{o.audit.claw_id}".encode()
        outs.append(OutRecord(self.names.caml_audit, key_partition(akey), akey, encode_caml(o.audit)))
        if o.refusal is not None:
            outs.append(self._rejected(rec, env, o.refusal.code, o.refusal.detail))
        return outs

    def _rejected(self, rec: LogRecord, env: Envelope | None, code: str, detail: str) -> OutRecord:
        meta = RecordMeta.of_envelope(env) if env is not None else None
        return stage_rejection(self.names, STAGE, rec, code, detail, meta=meta, max_detail=None)

    def failed(self, failure: Failure) -> list[OutRecord]:
        rec = failure.record
        if rec.topic == self.names.caml_status:
            return []  # an unreadable status record: in processing_failures, nothing to refuse
        return [self._rejected(rec, None, PROCESSING_ERROR, failure.detail)]


class CamlProcessor:
    """The caml step on the stream runtime: state in ``camlproc`` (the batch's transaction)."""

    name = NAME

    def __init__(self, names: TopicNames, scan: Scanner, limits: Mapping[str, int], default_limit: int,
                 cfg: ReputationConfig | None = None, store: CamlStore | None = None) -> None:  # fmt: skip
        self.cfg = cfg or ReputationConfig()
        self.core = CamlCore(names, CamlEngine(scan, limits, default_limit))
        self.store: CamlStore = store or InMemoryCamlStore()
        self.state = self.store.load(self.cfg)

    def input_topics(self) -> list[str]:
        return self.core.input_topics()

    def open(self, conn: Conn) -> None:
        self.store = PostgresCamlStore(conn)
        self.state = self.store.load(self.cfg)

    def process(self, records: Sequence[LogRecord], now_ms: int) -> list[OutRecord]:
        if not records:
            return []
        outputs = self.core.apply(self.state, records)
        self.store.save(self.state)
        return outputs

    def refuse(self, failure: Failure) -> list[OutRecord]:
        return self.core.failed(failure)


class CamlDriver:
    """Run the caml processor without a broker or a database; collect its outputs."""

    def __init__(self, names: TopicNames, scan: Scanner, limits: Mapping[str, int], default_limit: int,
                 cfg: ReputationConfig | None = None) -> None:  # fmt: skip
        self.processor = CamlProcessor(names, scan, limits, default_limit, cfg, InMemoryCamlStore())
        self.emitted: list[OutRecord] = []
        self._offsets: Counter[tuple[str, int]] = Counter()

    def pipe(self, topic: str, value: bytes, log_time: int, partition: int = 0) -> list[OutRecord]:
        off = self._offsets[(topic, partition)]
        self._offsets[(topic, partition)] += 1
        out = self.processor.process([LogRecord(topic, partition, off, log_time, None, value)], log_time)
        self.emitted += out
        return out

    def restart(self) -> None:
        """Forget the in-memory state and reload it from the store (as after a crash)."""
        self.processor.state = self.processor.store.load(self.processor.cfg)
