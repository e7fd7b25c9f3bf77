"""The kmms read model is a function of each topic's order, not of how two topics interleave.

Vectors travel on ``kmms.embeddings``, everything else on ``kmms.events``: a live projector and a
replay see them interleaved differently. Here the same records are folded into fresh schemas in
three interleavings (live-like, vectors first as a replay reading ahead, erasure before any
vector); the digests must be equal. The case that once differed: an episode told *after* an
erasure whose vector a replay folds *before* the erasure.
"""

from __future__ import annotations

import itertools
from typing import Any

from contracts.kmms_records import KmmsEmbedding, KmmsEpisode, KmmsEvent, encode_kmms
from contracts.positions import LogPosition
from contracts.topics import TopicNames
from governance.kmms.units import units_of
from hivemem.stack import Stack
from projections.kmms.read_model import KmmsProjection
from projections.replay import digest
from streams.records import LogRecord
from tests.integration.support import owner_db

NAMES = TopicNames()
TENANT, CLAW, SCOPE = "mem-order", "claw-o", "ana"


def _episode(eid: str, text: str) -> KmmsEpisode:
    return KmmsEpisode(episode_id=eid, session_id="s", thread_id="", content_type="NOTE", occurred_at=1,
                       content=text, content_hash=eid)  # fmt: skip


def _event(offset: int, kind: str, episode: KmmsEpisode | None = None) -> LogRecord:
    ev = KmmsEvent(event_id=f"ev-{offset}", kind=kind, at=1_000 + offset, source=f"src:0:{offset}",  # type: ignore[arg-type]
                   trace_id="t", episode=episode, tenant=TENANT, claw_id=CLAW, scope=SCOPE)  # fmt: skip
    return LogRecord(NAMES.kmms_events, 0, offset, 1_000 + offset, b"k", encode_kmms(ev))


def _vector(offset: int, unit_id: str, cause: int) -> LogRecord:
    e = KmmsEmbedding(unit_id=unit_id, model="m-test", vector=[0.1] * 384,
                      source=str(LogPosition(NAMES.kmms_events, 0, cause)), tenant=TENANT, claw_id=CLAW,
                      scope=SCOPE)  # fmt: skip
    return LogRecord(NAMES.kmms_embeddings, 0, offset, 1_000 + offset, b"k", encode_kmms(e))


def _fold_into(conn: Any, projection: KmmsProjection, schema: str, batches: list[list[LogRecord]]) -> None:
    """A fresh schema ``schema`` of the read model, with ``batches`` folded into it one after the other."""
    conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    with conn.transaction():
        for stmt in projection.ddl(schema):
            conn.execute(stmt)
        with conn.cursor() as cur:
            for batch in batches:
                projection.fold(cur, schema, batch)


def test_interleaving_of_events_and_vectors_does_not_change_the_model(stack: Stack) -> None:
    old, new = _episode("ep-old", "I live in Lisbon."), _episode("ep-new", "I live in Lisbon.")
    e0, e1, e2 = _event(0, "EPISODE_STORED", old), _event(1, "MEMORY_ERASED"), _event(2, "EPISODE_STORED", new)
    v0 = _vector(0, units_of(old)[0].unit_id, cause=0)
    v1 = _vector(1, units_of(new)[0].unit_id, cause=2)
    orders = {
        "live": [e0, v0, e1, e2, v1],
        "vectors_first": [v0, v1, e0, e1, e2],
        "erasure_first": [e0, e1, v0, v1, e2],
    }
    projection = KmmsProjection()
    digests: dict[str, str] = {}
    kept: dict[str, list[object]] = {}
    with owner_db(stack) as conn:
        for name, records in orders.items():
            schema = f"kmms_order_{name}"
            _fold_into(conn, projection, schema, [[rec] for rec in records])  # one a batch: the finest interleaving
            digests[name] = digest(conn, projection, schema)
            kept[name] = [r[0] for r in conn.execute(f"SELECT unit_id FROM {schema}.kmms_vectors ORDER BY 1")]
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
    assert kept["live"] == [units_of(new)[0].unit_id]
    for a, b in itertools.combinations(orders, 2):
        assert digests[a] == digests[b], (a, b, kept)


def test_a_vector_carries_its_units_time_whichever_topic_is_folded_first(stack: Stack) -> None:
    """A unit's and its sentence's vectors get the unit's event time (migration 34) whether they are folded after
    the unit, before it (a replay reading the vectors' topic ahead), or in the same batch; a node's has none. A
    time window's search reads them by that time (``kmms_vectors_time``)."""
    ep = KmmsEpisode(episode_id="ep-t", session_id="s", thread_id="", content_type="NOTE", occurred_at=7_777,
                     content="I moved to Porto. The flat is near the river.", content_hash="ep-t")  # fmt: skip
    unit = units_of(ep)[0].unit_id
    e0 = _event(0, "EPISODE_STORED", ep)
    own, sentence, node = _vector(0, unit, cause=0), _vector(1, f"{unit}~s1", cause=0), _vector(2, "node-1", cause=0)
    orders = {"vectors_after": [[e0], [own, sentence, node]], "vectors_first": [[own, sentence, node], [e0]],
              "one_batch": [[e0, own, sentence, node]]}  # fmt: skip
    projection = KmmsProjection()
    with owner_db(stack) as conn:
        for name, batches in orders.items():
            schema = f"kmms_time_{name}"
            _fold_into(conn, projection, schema, batches)
            times = {str(r[0]): r[1] for r in conn.execute(f"SELECT unit_id, occurred_at FROM {schema}.kmms_vectors")}
            untimed = conn.execute(f"SELECT count(*) FROM {schema}.kmms_vectors WHERE occurred_at IS NULL AND kind "
                                   "IN ('unit', 'sentence')").fetchone()  # fmt: skip
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
            assert times == {unit: 7_777, f"{unit}~s1": 7_777, "node-1": None}, name
            assert untimed == (0,), name
