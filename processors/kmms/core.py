"""The kmms processor: accepted episodes and erasures in; stored L4 episodes (``EPISODE_STORED`` on
``hivemem.kmms.events``), erasures (``MEMORY_ERASED``) or refusals out (rules:
``governance/kmms/episodes.py``).

Each episode gets one verdict: stored, or refused with PII_REJECTED (tenant policy ``reject``),
DUPLICATE_CONTENT (the same content is already in that memory: seed §2.3's content-hash dedup) or
DUPLICATE_EPISODE (the episode id is taken). Enrichment, embedding and consolidation run after it,
in their own processors, never on this write path. State (content hashes, episode ids) lives in
``kmmsproc.seen``, in the batch's transaction.

An erasure forgets the memory's seen keys and stores a watermark (``kmmsproc.erasures``, the
erasure's log time): an episode logged at or before it, still in flight when the erasure was
judged, is refused MEMORY_ERASED, so nothing told before an erasure comes back.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Protocol

from contracts.avro import decode_envelope
from contracts.kmms_records import KmmsEpisode, KmmsEvent, KmmsTurn, encode_kmms
from contracts.models import Envelope, EpisodePayload, ErasurePayload
from contracts.topics import TopicNames, key_partition
from governance.kmms.episodes import EpisodeRefusal, MemoryScope, PiiPolicy, StoredEpisode, judge
from processors.refusals import stage_rejection
from streams.offsets import Conn
from streams.processor import PROCESSING_ERROR, Failure
from streams.records import LogRecord, OutRecord

NAME = "kmms-processor"
STAGE = "kmms"
_NS = uuid.UUID("6d1f0c4e-5b7a-4a51-9d0e-2b8f3c9a7e10")


def forgotten(key: str) -> bool:
    """Whether an erasure forgets a seen key: content hashes yes, episode ids never."""
    return key.startswith("hash:")


def kmms_event_id(source: str, role: str) -> str:
    """Deterministic id of a KMMS event: its input position and its role among that input's outputs."""
    return str(uuid.uuid5(_NS, f"{source}|{role}"))


def kmms_out(names: TopicNames, ev: KmmsEvent) -> OutRecord:
    key = f"{ev.tenant}/{ev.claw_id}/{ev.scope}".encode()
    return OutRecord(names.kmms_events, key_partition(key), key, encode_kmms(ev))


class SeenStore(Protocol):
    """The processor's state: which episode holds a key ("id:<tenant>/<episode id>", "hash:<content hash>"),
    per memory, and each memory's erasure watermark (the log time of its last erasure)."""

    def get(self, keys: list[str]) -> dict[str, tuple[str, str]]:
        """key -> (episode id, memory key)."""

    def put(self, items: Mapping[str, tuple[str, str]]) -> set[str]:
        """Store the keys not held yet; the keys stored now (one another transaction holds is not)."""
        ...

    def erased(self, scopes: list[str]) -> dict[str, int]: ...

    def erase(self, scope: str, at: int) -> None:
        """Forget the memory's content hashes (its content may be told again) and raise its watermark to
        ``at``. Its episode ids stay taken: an id names one episode of the tenant for good, so no read
        model row or vector of an erased episode can meet a later one of the same id (a replay folds
        the vectors' topic in another interleaving than the live projector did)."""


class InMemorySeen:
    def __init__(self) -> None:
        self.rows: dict[str, tuple[str, str]] = {}
        self.watermarks: dict[str, int] = {}

    def get(self, keys: list[str]) -> dict[str, tuple[str, str]]:
        return {k: self.rows[k] for k in keys if k in self.rows}

    def put(self, items: Mapping[str, tuple[str, str]]) -> set[str]:
        new = {k for k in items if k not in self.rows}
        for k in new:
            self.rows[k] = items[k]
        return new

    def erased(self, scopes: list[str]) -> dict[str, int]:
        return {s: self.watermarks[s] for s in scopes if s in self.watermarks}

    def erase(self, scope: str, at: int) -> None:
        self.rows = {k: v for k, v in self.rows.items() if not (v[1] == scope and forgotten(k))}
        self.watermarks[scope] = max(at, self.watermarks.get(scope, at))


class PostgresSeen:
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    def get(self, keys: list[str]) -> dict[str, tuple[str, str]]:
        rows = self.conn.execute("SELECT key, episode_id, coalesce(scope, '') FROM kmmsproc.seen WHERE key = ANY(%s)",
                                 (keys,)).fetchall()  # fmt: skip
        return {str(k): (str(v), str(s)) for k, v, s in rows}

    def put(self, items: Mapping[str, tuple[str, str]]) -> set[str]:
        # A key another instance's open transaction inserted waits for it, then is not stored (nor returned).
        rows = self.conn.execute(
            "INSERT INTO kmmsproc.seen (key, episode_id, scope) SELECT * FROM unnest(%s::text[], %s::text[], "
            "%s::text[]) ON CONFLICT DO NOTHING RETURNING key",
            ([k for k in items], [e for e, _ in items.values()], [s for _, s in items.values()]),
        ).fetchall()
        return {str(r[0]) for r in rows}

    def erased(self, scopes: list[str]) -> dict[str, int]:
        rows = self.conn.execute("SELECT scope, erased_at FROM kmmsproc.erasures WHERE scope = ANY(%s)",
                                 (scopes,)).fetchall()  # fmt: skip
        return {str(s): int(str(a)) for s, a in rows}

    def erase(self, scope: str, at: int) -> None:
        self.conn.execute("DELETE FROM kmmsproc.seen WHERE scope = %s AND key LIKE 'hash:%%'", (scope,))
        self.conn.execute(
            "INSERT INTO kmmsproc.erasures VALUES (%s, %s) ON CONFLICT (scope) DO UPDATE "
            "SET erased_at = greatest(kmmsproc.erasures.erased_at, excluded.erased_at)",
            (scope, at),
        )


class KmmsProcessor:
    # State per memory (content seen, erasure watermark), read and written per batch in Postgres; the gate writes a
    # memory's episodes and erasures to the memory's partition of both topics (contracts.topics.BY_MEMORY), and
    # the range assignor gives an instance the same partition of each: it may be split (streams.group).
    parallel = True
    copartitioned = True
    name = NAME

    def __init__(self, names: TopicNames, policies: Mapping[str, PiiPolicy], store: SeenStore | None = None) -> None:
        self.names = names
        self.policies = policies
        self.store: SeenStore = store or InMemorySeen()

    def input_topics(self) -> list[str]:
        return [self.names.accepted("episode"), self.names.accepted("erasure")]

    def open(self, conn: Conn) -> None:
        self.store = PostgresSeen(conn)

    def process(self, records: Sequence[LogRecord], now_ms: int) -> list[OutRecord]:
        # Log time orders the two topics: an erasure takes what was logged before it, never what comes after.
        ordered = sorted(records, key=lambda r: (r.log_time(), r.topic, r.partition, r.offset))
        decoded = []
        for rec in ordered:
            env = decode_envelope(rec.value or b"")
            if not isinstance(env.payload, EpisodePayload | ErasurePayload):
                raise ValueError(f"kmms cannot take a {env.type} envelope")
            decoded.append((rec, env, env.payload))
        scopes = sorted({MemoryScope(env.tenant, env.claw_id, p.user_id).key for _, env, p in decoded})
        watermarks = self.store.erased(scopes)
        keys = [f"id:{env.tenant}/{p.episode_id}" for _, env, p in decoded if isinstance(p, EpisodePayload)]
        judged: list[tuple[LogRecord, Envelope, EpisodePayload, MemoryScope, StoredEpisode | EpisodeRefusal]] = []
        for rec, env, p in decoded:
            if isinstance(p, EpisodePayload):
                scope = MemoryScope(env.tenant, env.claw_id, p.user_id)
                verdict = judge(scope, p, self.policies.get(env.tenant, "redact"))
                judged.append((rec, env, p, scope, verdict))
                if not isinstance(verdict, EpisodeRefusal):
                    keys.append(f"hash:{verdict.content_hash}")
        seen = self.store.get(keys)
        fresh: dict[str, tuple[str, str]] = {}
        stored: list[tuple[int, LogRecord, str, str]] = []  # (index in outs, record, id key, hash key)
        outs: list[OutRecord] = []
        verdicts = iter(judged)
        for rec, env, p in decoded:
            if isinstance(p, ErasurePayload):
                outs.append(self._erase(rec, env, p, watermarks, seen, fresh))
                continue
            _, _, _, scope, verdict = next(verdicts)
            if isinstance(verdict, EpisodeRefusal):
                outs.append(self._rejected(rec, verdict.code, verdict.detail))
                continue
            if rec.log_time() <= watermarks.get(scope.key, -1):  # sent before the erasure, read after it
                outs.append(self._rejected(rec, "MEMORY_ERASED", "the memory was erased after this episode was sent"))
                continue
            id_key, hash_key = f"id:{env.tenant}/{p.episode_id}", f"hash:{verdict.content_hash}"
            if id_key in seen or id_key in fresh:
                outs.append(self._rejected(rec, "DUPLICATE_EPISODE", f"episode id {p.episode_id} was taken before"))
                continue
            first = (seen.get(hash_key) or fresh.get(hash_key) or (None, ""))[0]
            if first is not None:
                outs.append(self._rejected(rec, "DUPLICATE_CONTENT", f"the same content is episode {first}"))
                continue
            fresh[id_key] = fresh[hash_key] = (p.episode_id, scope.key)
            stored.append((len(outs), rec, id_key, hash_key))
            source = str(rec.position)
            episode = KmmsEpisode(episode_id=p.episode_id, session_id=p.session_id or p.episode_id,
                                  thread_id=p.thread_id, content_type=p.content_type, occurred_at=p.occurred_at,
                                  content=verdict.content, content_hash=verdict.content_hash,
                                  turns=[KmmsTurn(role=t.role, content=t.content, name=t.name) for t in verdict.turns],
                                  redacted=list(verdict.redacted))  # fmt: skip
            ev = KmmsEvent(event_id=kmms_event_id(source, "stored"), kind="EPISODE_STORED", tenant=env.tenant,
                           claw_id=env.claw_id, scope=scope.user_id, at=rec.log_time(), source=source,
                           trace_id=env.trace_id, episode=episode, related_id=env.event_id)  # fmt: skip
            outs.append(kmms_out(self.names, ev))
        if fresh:
            self._claim(fresh, stored, outs)
        return outs

    def _claim(self, fresh: dict[str, tuple[str, str]], stored: list[tuple[int, LogRecord, str, str]],
               outs: list[OutRecord]) -> None:  # fmt: skip
        """Store the batch's keys. An episode id is the tenant's, and two memories of a tenant may be judged by two
        instances (split by memory) at once: an id another instance claimed first turns this batch's episode into
        a DUPLICATE_EPISODE refusal, and its content hash is not stored. A content hash is its memory's, judged by
        one instance only."""
        ids = {k: v for k, v in fresh.items() if k.startswith("id:")}
        lost = set(ids) - self.store.put(ids)
        for i, rec, id_key, _ in stored:
            if id_key in lost:
                outs[i] = self._rejected(rec, "DUPLICATE_EPISODE", f"episode id {id_key.split('/', 1)[1]} was taken "
                                         "before")  # fmt: skip
        dropped = {h for _, _, id_key, h in stored if id_key in lost}
        self.store.put({k: v for k, v in fresh.items() if not k.startswith("id:") and k not in dropped})

    def _erase(self, rec: LogRecord, env: Envelope, p: ErasurePayload, watermarks: dict[str, int],
               seen: dict[str, tuple[str, str]], fresh: dict[str, tuple[str, str]]) -> OutRecord:  # fmt: skip
        """MEMORY_ERASED for the memory; its content hashes are forgotten, including this batch's, so the
        same content can be told again (under a new id), and episodes logged before now are refused."""
        scope = MemoryScope(env.tenant, env.claw_id, p.user_id)
        self.store.erase(scope.key, rec.log_time())
        for known in (seen, fresh):  # this batch's view of the memory's keys goes too
            for k in [k for k, (_, s) in known.items() if s == scope.key and forgotten(k)]:
                del known[k]
        watermarks[scope.key] = max(rec.log_time(), watermarks.get(scope.key, -1))
        source = str(rec.position)
        ev = KmmsEvent(event_id=kmms_event_id(source, "erased"), kind="MEMORY_ERASED", tenant=env.tenant,
                       claw_id=env.claw_id, scope=scope.user_id, at=rec.log_time(), source=source,
                       trace_id=env.trace_id, node_id=p.erasure_id, related_id=env.event_id,
                       detail=p.reason or None)  # fmt: skip
        return kmms_out(self.names, ev)

    def _rejected(self, rec: LogRecord, code: str, detail: str) -> OutRecord:
        # The refused bytes are not kept (an episode may hold personal data); the detail is kept whole.
        return stage_rejection(self.names, STAGE, rec, code, detail, max_detail=None)

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
