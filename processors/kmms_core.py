"""The kmms processor: accepted episodes in; stored L4 episodes (``EPISODE_STORED`` on
``hivemem.kmms.events``) or refusals out (rules: ``governance/kmms/episodes.py``).

Each episode gets one verdict: stored, or refused with PII_REJECTED (tenant policy ``reject``),
DUPLICATE_CONTENT (the same content is already in that memory: seed §2.3's content-hash dedup) or
DUPLICATE_EPISODE (the episode id is taken). Enrichment, embedding and consolidation run after it,
in their own processors, never on this write path. State (content hashes, episode ids) lives in
``kmmsproc.seen``, in the batch's transaction.
"""

from __future__ import annotations

import hashlib
import uuid
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Protocol

from contracts.avro import decode_envelope, encode_rejection
from contracts.kmms_records import KmmsEpisode, KmmsEvent, KmmsTurn, encode_kmms
from contracts.models import EpisodePayload, Rejection
from contracts.topics import DEFAULT_PARTITIONS, TopicNames
from governance.gate import RecordMeta, derived_event_id
from governance.kmms.episodes import EpisodeRefusal, MemoryScope, PiiPolicy, judge
from processors.gate_core import meta_of
from streams.offsets import Conn
from streams.processor import PROCESSING_ERROR, Failure
from streams.records import LogRecord, OutRecord

NAME = "kmms-processor"
STAGE = "kmms"
_NS = uuid.UUID("6d1f0c4e-5b7a-4a51-9d0e-2b8f3c9a7e10")


def partition_of(key: bytes) -> int:
    return zlib.crc32(key) % DEFAULT_PARTITIONS


def kmms_event_id(source: str, role: str) -> str:
    """Deterministic id of a KMMS event: its input position and its role among that input's outputs."""
    return str(uuid.uuid5(_NS, f"{source}|{role}"))


def kmms_out(names: TopicNames, ev: KmmsEvent) -> OutRecord:
    key = f"{ev.tenant}/{ev.claw_id}/{ev.scope}".encode()
    return OutRecord(names.kmms_events, partition_of(key), key, encode_kmms(ev))


class SeenStore(Protocol):
    def get(self, keys: list[str]) -> dict[str, str]: ...

    def put(self, items: Mapping[str, str]) -> None: ...


class InMemorySeen:
    def __init__(self) -> None:
        self.rows: dict[str, str] = {}

    def get(self, keys: list[str]) -> dict[str, str]:
        return {k: self.rows[k] for k in keys if k in self.rows}

    def put(self, items: Mapping[str, str]) -> None:
        self.rows.update(items)


class PostgresSeen:
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    def get(self, keys: list[str]) -> dict[str, str]:
        rows = self.conn.execute("SELECT key, episode_id FROM kmmsproc.seen WHERE key = ANY(%s)", (keys,)).fetchall()
        return {str(k): str(v) for k, v in rows}

    def put(self, items: Mapping[str, str]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany("INSERT INTO kmmsproc.seen VALUES (%s, %s) ON CONFLICT DO NOTHING", list(items.items()))


class KmmsProcessor:
    name = NAME

    def __init__(self, names: TopicNames, policies: Mapping[str, PiiPolicy], store: SeenStore | None = None) -> None:
        self.names = names
        self.policies = policies
        self.store: SeenStore = store or InMemorySeen()

    def input_topics(self) -> list[str]:
        return [self.names.accepted("episode")]

    def open(self, conn: Conn) -> None:
        self.store = PostgresSeen(conn)

    def process(self, records: Sequence[LogRecord], now_ms: int) -> list[OutRecord]:
        ordered = sorted(records, key=lambda r: (r.log_time(), r.topic, r.partition, r.offset))
        decoded = []
        for rec in ordered:
            env = decode_envelope(rec.value or b"")
            if not isinstance(env.payload, EpisodePayload):
                raise ValueError(f"kmms cannot take a {env.type} envelope")
            decoded.append((rec, env, env.payload))
        keys = [f"id:{env.tenant}/{p.episode_id}" for _, env, p in decoded]
        judged = []
        for rec, env, p in decoded:
            scope = MemoryScope(env.tenant, env.claw_id, p.user_id)
            verdict = judge(scope, p, self.policies.get(env.tenant, "redact"))
            judged.append((rec, env, p, scope, verdict))
            if not isinstance(verdict, EpisodeRefusal):
                keys.append(f"hash:{verdict.content_hash}")
        seen = self.store.get(keys)
        fresh: dict[str, str] = {}
        outs: list[OutRecord] = []
        for rec, env, p, scope, verdict in judged:
            if isinstance(verdict, EpisodeRefusal):
                outs.append(self._rejected(rec, verdict.code, verdict.detail))
                continue
            id_key, hash_key = f"id:{env.tenant}/{p.episode_id}", f"hash:{verdict.content_hash}"
            if id_key in seen or id_key in fresh:
                outs.append(self._rejected(rec, "DUPLICATE_EPISODE", f"episode {p.episode_id} exists"))
                continue
            first = seen.get(hash_key) or fresh.get(hash_key)
            if first is not None:
                outs.append(self._rejected(rec, "DUPLICATE_CONTENT", f"the same content is episode {first}"))
                continue
            fresh[id_key] = fresh[hash_key] = p.episode_id
            source = str(rec.position)
            episode = KmmsEpisode(episode_id=p.episode_id, session_id=p.session_id or p.episode_id,
                                  thread_id=p.thread_id, content_type=p.content_type, occurred_at=p.occurred_at,
                                  content=verdict.content, content_hash=verdict.content_hash,
                                  turns=[KmmsTurn(role=t.role, content=t.content) for t in verdict.turns],
                                  redacted=list(verdict.redacted))  # fmt: skip
            ev = KmmsEvent(event_id=kmms_event_id(source, "stored"), kind="EPISODE_STORED", tenant=env.tenant,
                           claw_id=env.claw_id, scope=scope.user_id, at=rec.log_time(), source=source,
                           trace_id=env.trace_id, episode=episode, related_id=env.event_id)  # fmt: skip
            outs.append(kmms_out(self.names, ev))
        if fresh:
            self.store.put(fresh)
        return outs

    def _rejected(self, rec: LogRecord, code: str, detail: str) -> OutRecord:
        m = meta_of(rec.value) or RecordMeta()
        value = rec.value or b""
        # The refused bytes are not kept: an episode may hold personal data.
        rej = Rejection(event_id=derived_event_id(rec.position), reason_code=code, detail=detail, processor=STAGE,
                        source_topic=rec.topic, source_partition=rec.partition, source_offset=rec.offset,
                        log_time=rec.log_time(), tenant=m.tenant, type=m.type, trace_id=m.trace_id,
                        claw_id=m.claw_id, instance_id=m.instance_id, idempotency_key=m.idempotency_key,
                        envelope_event_id=m.event_id, original=b"", original_size=len(value),
                        original_sha256=hashlib.sha256(value).hexdigest())  # fmt: skip
        key = f"{m.tenant}/{m.type}:{m.event_id}".encode()
        return OutRecord(self.names.rejected, rec.partition, key, encode_rejection(rej))

    def refuse(self, failure: Failure) -> list[OutRecord]:
        return [self._rejected(failure.record, PROCESSING_ERROR, failure.detail)]


class KmmsDriver:
    """Run the kmms processor without a broker or a database; collect its outputs."""

    def __init__(self, names: TopicNames, policies: Mapping[str, PiiPolicy]) -> None:
        self.processor = KmmsProcessor(names, policies, InMemorySeen())
        self._offsets: Counter[tuple[str, int]] = Counter()

    def pipe(self, topic: str, value: bytes, log_time: int, partition: int = 0) -> list[OutRecord]:
        off = self._offsets[(topic, partition)]
        self._offsets[(topic, partition)] += 1
        return self.processor.process([LogRecord(topic, partition, off, log_time, None, value)], log_time)
