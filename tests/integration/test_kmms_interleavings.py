"""Generated logs, folded in random interleavings: the kmms read model depends on each partition's order
only, never on how partitions and the two topics interleave (which differs between a live projector
and a replay).

Each example is a log a pipeline could write: memories of two tenants on two ``kmms.events``
partitions (episodes, nodes, erasures, and the late outputs of an enricher or consolidator that
lagged behind an erasure), every episode's and node's vectors on two ``kmms.embeddings``
partitions. Episode ids repeat across tenants (each tenant picks its own), never within one (the
kmms processor refuses a reused id, even after an erasure). The live order folds each vector
after its cause; the random orders merge the four partitions any way at all, in batches of any size.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contracts.kmms_records import KmmsEmbedding, KmmsEpisode, KmmsEvent, KmmsNode, decode_kmms, encode_kmms
from contracts.topics import TopicNames
from governance.kmms.units import sentences_of, units_of
from hivemem.stack import Stack
from projections.kmms.read_model import KmmsProjection
from projections.replay import differences, digest
from streams.records import LogRecord
from tests.integration.support import owner_db

NAMES = TopicNames()
SCHEMAS = ("kmms_mix_live", "kmms_mix_a", "kmms_mix_b")
# (tenant, scope) -> events partition: two tenants share partition 0, two memories of one tenant differ.
MEMORIES = {("mix-t1", "ana"): 0, ("mix-t1", "bob"): 1, ("mix-t3", "ana"): 0}
POOL = ("e1", "e2", "e3", "e4")  # episode ids a tenant may pick
TEXTS = ("I live in Lisbon.", "I live in Porto now. I cycle to work.", "My cat is called Miso.")


@dataclass
class _Log:
    events: dict[int, list[LogRecord]] = field(default_factory=lambda: {0: [], 1: []})
    vectors: dict[int, list[LogRecord]] = field(default_factory=lambda: {0: [], 1: []})
    live: list[LogRecord] = field(default_factory=list)  # every vector right after its cause
    clock: int = 1_000

    def __repr__(self) -> str:  # what hypothesis prints for a falsifying example: the log, one record a line
        lines = []
        for rec in self.live:
            where = f"{rec.topic.split('.')[-1]}:{rec.partition}:{rec.offset}"
            if rec.topic == NAMES.kmms_embeddings:
                v = decode_kmms(rec.value or b"", KmmsEmbedding)
                lines.append(f"{where} {v.tenant}/{v.scope} vector {v.unit_id} of {v.source}")
                continue
            x = decode_kmms(rec.value or b"", KmmsEvent)
            what = x.episode.episode_id if x.episode else x.node.node_id if x.node else ""
            lines.append(f"{where} {x.tenant}/{x.scope} {x.kind} at={x.at} {what}")
        return "\n".join(lines)

    def tick(self) -> int:
        self.clock += 1
        return self.clock

    def event(self, partition: int, ev: KmmsEvent) -> LogRecord:
        rec = LogRecord(NAMES.kmms_events, partition, len(self.events[partition]), ev.at, b"k", encode_kmms(ev))
        self.events[partition].append(rec)
        self.live.append(rec)
        return rec

    def vector(self, cause: LogRecord, ev: KmmsEvent, unit_id: str, value: float) -> None:
        key = f"{ev.tenant}/{unit_id}|m-test".encode()
        p = zlib.crc32(key) % 2
        e = KmmsEmbedding(unit_id=unit_id, tenant=ev.tenant, claw_id="claw", scope=ev.scope, model="m-test",
                          vector=[value] * 384, source=str(cause.position))  # fmt: skip
        rec = LogRecord(NAMES.kmms_embeddings, p, len(self.vectors[p]), self.clock, key, encode_kmms(e))
        self.vectors[p].append(rec)
        self.live.append(rec)


def _ev(tenant: str, scope: str, kind: str, at: int, n: int, **kw: object) -> KmmsEvent:
    return KmmsEvent(event_id=f"{tenant}-{scope}-{n}", kind=kind, tenant=tenant, claw_id="claw", scope=scope,  # type: ignore[arg-type]
                     at=at, source=f"src:0:{n}", trace_id="t", **kw)  # type: ignore[arg-type]  # fmt: skip


@st.composite
def logs(draw: st.DrawFn) -> _Log:
    log = _Log()
    used: dict[str, set[str]] = {}  # tenant -> episode ids taken
    told: dict[tuple[str, str], list[tuple[str, int]]] = {m: [] for m in MEMORIES}  # (episode, at) since erasure
    for n in range(draw(st.integers(4, 14))):
        tenant, scope = draw(st.sampled_from(sorted(MEMORIES)))
        p, at = MEMORIES[(tenant, scope)], log.tick()
        op = draw(st.sampled_from(("store", "store", "node", "erase", "late")))
        free = [e for e in POOL if e not in used.setdefault(tenant, set())]
        if op == "store" and free:
            eid = draw(st.sampled_from(free))
            used[tenant].add(eid)
            ep = KmmsEpisode(episode_id=eid, session_id="s", thread_id="", content_type="NOTE", occurred_at=at,
                             content=draw(st.sampled_from(TEXTS)), content_hash=f"{tenant}{eid}")  # fmt: skip
            ev = _ev(tenant, scope, "EPISODE_STORED", at, n, episode=ep)
            rec = log.event(p, ev)
            told[(tenant, scope)].append((eid, at))
            for u in units_of(ep):
                log.vector(rec, ev, u.unit_id, float(n))
                for s in sentences_of(u.unit_id, u.text):
                    log.vector(rec, ev, s.unit_id, float(n) + 0.5)
        elif op in ("node", "late") and (op == "node" or told[(tenant, scope)] == []):
            # A node of the memory's episodes; "late": a consolidator's output for an episode told before an
            # erasure, logged after it (its time is its cause's, so the read model skips it).
            sources = [e for e, _ in told[(tenant, scope)]]
            node_at = at if op == "node" else at - draw(st.integers(1, 3))
            node = KmmsNode(node_id=f"node-{tenant}-{n}", layer=3, entity="me", topic="home", content="lives",
                            version=1, valid_from=node_at, event_time=node_at, confidence=0.8, source_ids=sources,
                            model="local")  # fmt: skip
            ev = _ev(tenant, scope, "NODE_CREATED", node_at, n, node=node)
            log.vector(log.event(p, ev), ev, node.node_id, float(n))
        elif op == "erase":
            log.event(p, _ev(tenant, scope, "MEMORY_ERASED", at, n, node_id=f"erasure-{n}"))
            told[(tenant, scope)] = []
    return log


def _merged(log: _Log, picks: list[int], sizes: list[int]) -> Iterator[list[LogRecord]]:
    """The four partitions merged in the order ``picks`` says, cut into batches of ``sizes``."""
    queues = [list(log.events[0]), list(log.events[1]), list(log.vectors[0]), list(log.vectors[1])]
    merged: list[LogRecord] = []
    i = 0
    while any(queues):
        nonempty = [q for q in queues if q]
        merged.append(nonempty[picks[i % len(picks)] % len(nonempty)].pop(0))
        i += 1
    j = 0
    while merged:
        size = sizes[j % len(sizes)]
        yield merged[:size]
        merged = merged[size:]
        j += 1


@pytest.fixture(scope="module")
def schemas(stack: Stack) -> Iterator[None]:
    with owner_db(stack) as conn:
        for s in SCHEMAS:
            conn.execute(f"DROP SCHEMA IF EXISTS {s} CASCADE")
            with conn.transaction():
                for stmt in KmmsProjection().ddl(s):
                    conn.execute(stmt)  # type: ignore[arg-type]
    yield
    with owner_db(stack) as conn:
        for s in SCHEMAS:
            conn.execute(f"DROP SCHEMA IF EXISTS {s} CASCADE")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(log=logs(), picks=st.lists(st.integers(0, 3), min_size=1, max_size=30),
       sizes=st.lists(st.integers(1, 6), min_size=1, max_size=5))  # fmt: skip
def test_any_interleaving_folds_to_the_live_model(stack: Stack, schemas: None, log: _Log, picks: list[int],
                                                  sizes: list[int]) -> None:  # fmt: skip
    projection = KmmsProjection()
    orders = {
        "kmms_mix_live": [[r] for r in log.live],
        "kmms_mix_a": list(_merged(log, picks, sizes)),
        "kmms_mix_b": list(_merged(log, [3 - p for p in picks], [1])),  # vectors first where a took events
    }
    with owner_db(stack) as conn:
        digests = {}
        for schema, batches in orders.items():
            with conn.transaction():
                for t in projection.tables:
                    conn.execute(f"TRUNCATE {schema}.{t.table}")
                with conn.cursor() as cur:
                    for batch in batches:
                        projection.fold(cur, schema, batch)
            digests[schema] = digest(conn, projection, schema)
        for schema in SCHEMAS[1:]:
            if digests[schema] != digests[SCHEMAS[0]]:
                found = differences(conn, projection, SCHEMAS[0], schema)
                pytest.fail(
                    f"{schema} differs from the live order:\n"
                    + "\n".join(d.describe() for d in found)
                    + f"\nthe log:\n{log!r}"
                )
