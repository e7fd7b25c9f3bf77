"""The KMMS consolidator: stored and enriched episodes in (``hivemem.kmms.events``); L1–L3 nodes,
their versions, reinforcements and contradictions out, on the same topic (rules:
``governance/kmms/consolidation.py``; text from the configured back-end, an OpenAI-compatible LLM
or the local deterministic consolidator).

It reads its own topic and ignores its own kinds; a ``MEMORY_ERASED`` starts the memory over. State: one
JSON document per memory in ``kmmsproc.memory``, saved in the batch's transaction with the offsets and the
outbox, so a crash redoes the batch from the stored state and re-emits the same events (deterministic ids).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from psycopg.types.json import Jsonb

from contracts.kmms_records import KmmsEvent, KmmsNode, decode_kmms
from contracts.topics import TopicNames
from governance.kmms.consolidation import ConsolidationEngine, Consolidator, Emitted, ScopeState
from governance.kmms.values import USER_ENTITY, EpisodeText
from inference.kmms.consolidator import ConsolidatorUnavailable
from processors.kmms.core import kmms_event_id, kmms_out
from streams.offsets import Conn
from streams.processor import Failure, Outage
from streams.records import LogRecord, OutRecord

NAME = "kmms-consolidator"
ScopeKey = tuple[str, str, str]  # tenant, claw, user


class StateStore(Protocol):
    def load(self, keys: list[ScopeKey]) -> dict[ScopeKey, ScopeState]: ...

    def save(self, states: dict[ScopeKey, ScopeState]) -> None: ...


class InMemoryStates:
    def __init__(self) -> None:
        self.docs: dict[ScopeKey, str] = {}

    def load(self, keys: list[ScopeKey]) -> dict[ScopeKey, ScopeState]:
        return {k: ScopeState.model_validate_json(self.docs[k]) for k in keys if k in self.docs}

    def save(self, states: dict[ScopeKey, ScopeState]) -> None:
        self.docs.update({k: s.model_dump_json() for k, s in states.items()})


class PostgresStates:
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    def load(self, keys: list[ScopeKey]) -> dict[ScopeKey, ScopeState]:
        rows = self.conn.execute(
            "SELECT tenant, claw_id, scope, state FROM kmmsproc.memory WHERE (tenant, claw_id, scope) IN "
            "(SELECT * FROM unnest(%s::text[], %s::text[], %s::text[]))",
            ([k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys]),
        ).fetchall()
        return {(str(t), str(c), str(s)): ScopeState.model_validate(doc) for t, c, s, doc in rows}

    def save(self, states: dict[ScopeKey, ScopeState]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO kmmsproc.memory VALUES (%s, %s, %s, %s) ON CONFLICT (tenant, claw_id, scope) "
                "DO UPDATE SET state = excluded.state",
                [(*k, Jsonb(s.model_dump(mode="json"))) for k, s in states.items()],
            )


class KmmsConsolidatorProcessor:
    # State per memory (kmmsproc.memory), read and written per batch; a memory's events share a partition (their
    # key), so its partitions may be split over instances (streams.group, HIVEMEM_INSTANCE).
    parallel = True
    name = NAME

    def __init__(self, names: TopicNames, backend: Consolidator, batch: int = 3,
                 store: StateStore | None = None) -> None:  # fmt: skip
        self.names = names
        self.engine = ConsolidationEngine(backend, batch)
        self.store: StateStore = store or InMemoryStates()

    def input_topics(self) -> list[str]:
        return [self.names.kmms_events]

    def open(self, conn: Conn) -> None:
        self.store = PostgresStates(conn)

    def process(self, records: Sequence[LogRecord], now_ms: int) -> list[OutRecord]:
        todo = []
        for rec in sorted(records, key=lambda r: (r.partition, r.offset)):  # a memory's events: one partition
            ev = decode_kmms(rec.value or b"", KmmsEvent)
            if ev.kind in ("EPISODE_STORED", "EPISODE_ENRICHED", "MEMORY_ERASED"):
                todo.append((rec, ev))
        if not todo:
            return []
        keys = sorted({(ev.tenant, ev.claw_id, ev.scope) for _, ev in todo})
        states = self.store.load(keys)
        outs: list[OutRecord] = []
        for rec, ev in todo:
            if ev.kind == "MEMORY_ERASED":  # start the memory over: its texts, pending pairs and facts go
                states[(ev.tenant, ev.claw_id, ev.scope)] = ScopeState()
                continue
            st = states.setdefault((ev.tenant, ev.claw_id, ev.scope), ScopeState())
            if ev.kind == "EPISODE_STORED" and ev.episode is not None:
                e = ev.episode
                self.engine.stored(st, EpisodeText(e.episode_id, e.session_id, e.occurred_at, e.content))
            elif ev.enrichment is not None:
                en = ev.enrichment
                source = str(rec.position)
                owner = any(x.name == USER_ENTITY for x in en.entities)
                try:
                    emitted = self.engine.enriched(st, en.episode_id, en.primary_entity, en.primary_topic, source,
                                                   owner)  # fmt: skip
                except ConsolidatorUnavailable as exc:  # the LLM is down: wait at the stored offset, refuse nothing
                    raise Outage(f"{NAME}: {exc}") from exc
                outs += [kmms_out(self.names, self._event(ev, source, i, x)) for i, x in enumerate(emitted)]
        self.store.save(states)
        return outs

    def _event(self, cause: KmmsEvent, source: str, i: int, x: Emitted) -> KmmsEvent:
        node = None
        if x.node is not None:
            n = x.node
            node = KmmsNode(node_id=n.node_id, layer=n.layer, entity=n.entity, topic=n.topic,
                            time_window=n.time_window, content=n.content, version=n.version, supersedes=n.supersedes,
                            valid_from=n.valid_from, event_time=n.event_time, fact_key=n.fact_key,
                            fact_value=n.fact_value, fact_type=n.fact_type, confidence=n.confidence, context=n.context,
                            source_ids=list(n.source_ids), model=self.engine.backend.model_id)  # fmt: skip
        return KmmsEvent(event_id=kmms_event_id(source, f"c{i}"), kind=x.kind, tenant=cause.tenant,
                         claw_id=cause.claw_id, scope=cause.scope, at=cause.at, source=source,
                         trace_id=cause.trace_id, node=node, node_id=x.node_id, related_id=x.related_id,
                         detail=x.detail, value=x.value)  # fmt: skip

    def refuse(self, failure: Failure) -> list[OutRecord]:
        return []  # in processing_failures; the episode stays searchable at L4, only unconsolidated
