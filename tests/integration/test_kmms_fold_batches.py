"""The KMMS read model's fold gives the same tables however a log is cut into batches.

A batch's events are folded in memory against what the tables already hold and written in a few statements
(projections/kmms/events.py). Folding a log one record a batch reads everything back from the
tables between events, folding it in one batch reads nothing back: equal digests, over random logs whose ids
collide on purpose (an episode stored twice, an enrichment before its episode, a change of a node that does
not exist yet, a reinforcement without a source, flags, erasures between them), say the in-memory path does
what the tables would have done; and the fold as it was before batches (one statement or more an event, kept
here as the reference) gives those tables too, so a live model folded by it compares equal to a replay.
"""

from __future__ import annotations

import random

import psycopg
import pytest
from psycopg.types.json import Jsonb

from contracts.kmms_records import (
    KmmsEmbedding,
    KmmsEnrichment,
    KmmsEntity,
    KmmsEpisode,
    KmmsEvent,
    KmmsNode,
    KmmsTurn,
    encode_kmms,
)
from contracts.topics import TopicNames
from governance.kmms.phrasing import fact_terms
from governance.kmms.units import units_of
from governance.transcripts import turn_layout
from hivemem.stack import Stack
from projections.kmms import read_model as kmms_model
from projections.kmms.read_model import _EP, _NODE, KmmsProjection
from projections.replay import table_digests
from streams.records import LogRecord
from tests.integration.support import owner_db

NAMES = TopicNames()
Cur = psycopg.Cursor[tuple[object, ...]]
KINDS = ("EPISODE_STORED", "EPISODE_STORED", "EPISODE_ENRICHED", "NODE_CREATED", "NODE_CREATED", "NODE_SUPERSEDED",
         "NODE_REINFORCED", "NODE_VERIFIED", "CONTRADICTION_LOGGED", "VECTOR", "MEMORY_ERASED")  # fmt: skip


def _log(seed: int, n: int = 240) -> list[LogRecord]:
    rng = random.Random(seed)
    out: list[LogRecord] = []
    offsets = {NAMES.kmms_events: 0, NAMES.kmms_embeddings: 0}
    for i in range(n):
        kind = rng.choice(KINDS)
        if kind == "MEMORY_ERASED" and rng.random() < 0.7:
            kind = "NODE_VERIFIED"  # erasures rarer than the rest
        scope = rng.choice(("ana", "bo"))
        base = {"event_id": f"ev-{seed}-{i % 200}", "kind": kind, "tenant": "mem-batches", "claw_id": "claw-b",
                "scope": scope, "at": 1_000 + i, "source": f"src:0:{i}", "trace_id": "t"}  # fmt: skip
        ep_id, node_id = f"ep-{rng.randrange(8)}", f"n-{rng.randrange(8)}"
        record: KmmsEvent | KmmsEmbedding
        if kind == "VECTOR":
            record = KmmsEmbedding(unit_id=f"{ep_id}#0", tenant="mem-batches", claw_id="claw-b", scope=scope,
                                   model="m", vector=[rng.random() for _ in range(384)],
                                   source=f"{NAMES.kmms_events}:0:{rng.randrange(max(offsets[NAMES.kmms_events], 1))}",
                                   voice=rng.choice(("", "told")))  # fmt: skip
        elif kind == "EPISODE_STORED":
            turns = [KmmsTurn(role=r, content=f"{r} says {rng.choice(('hi', 'I moved to Porto. It rains.'))}")
                     for r in ("user", "assistant")] if rng.random() < 0.5 else []  # fmt: skip
            text = "\n".join(f"{t.role}: {t.content}" for t in turns) or f"note {rng.randrange(3)}"
            ep = KmmsEpisode(episode_id=ep_id, session_id="s", thread_id="", content_type="NOTE",
                             occurred_at=i, content=text, content_hash=f"h{i}", turns=turns)  # fmt: skip
            record = KmmsEvent.model_validate({**base, "episode": ep, "related_id": f"env-{i}"})
        elif kind == "EPISODE_ENRICHED":
            names = rng.sample(("Ana", "ana", "Porto", "ACME"), 2)
            en = KmmsEnrichment(episode_id=ep_id, entities=[KmmsEntity(name=x, kind=rng.choice(("PERSON", "ORG")),
                                                                       score=0.5) for x in names],
                                topics=rng.sample(("home", "work", "Home"), 2), primary_entity=names[0],
                                primary_topic="home", model="m")  # fmt: skip
            record = KmmsEvent.model_validate({**base, "enrichment": en})
        elif kind == "NODE_CREATED":
            node = KmmsNode(node_id=node_id, layer=rng.choice((1, 2, 3)), entity="user", topic="city",
                            content=f"user city is {i}", version=1, valid_from=i, event_time=i,
                            fact_key=rng.choice((None, "city")), fact_value=str(i), confidence=0.5,
                            source_ids=[ep_id], model="m")  # fmt: skip
            record = KmmsEvent.model_validate({**base, "node": node})
        else:
            record = KmmsEvent.model_validate({
                **base, "node_id": node_id, "related_id": rng.choice((None, f"n-{rng.randrange(8)}", ep_id)),
                "value": rng.choice((None, 0.5, 2_000.0)) if kind != "NODE_REINFORCED" else 0.75,
                "detail": rng.choice((None, "direct:flag_for_review", "temporal:supersede", "contextual:coexist")),
            })  # fmt: skip
        topic = NAMES.kmms_embeddings if isinstance(record, KmmsEmbedding) else NAMES.kmms_events
        out.append(LogRecord(topic, 0, offsets[topic], 1_000 + i, b"k", encode_kmms(record)))
        offsets[topic] += 1
    return out


def _cuts(records: list[LogRecord], how: str, rng: random.Random) -> list[list[LogRecord]]:
    if how in ("one", "reference"):
        return [records]
    if how == "each":
        return [[r] for r in records]
    out, i = [], 0
    while i < len(records):
        step = rng.randint(1, 40)
        out.append(records[i : i + step])
        i += step
    return out


WAYS = ("one", "each", "random", "reference")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_any_cut_into_batches_gives_the_same_tables(stack: Stack, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    records = _log(seed)
    projection = KmmsProjection()
    digests: dict[str, dict[str, str]] = {}
    with owner_db(stack) as conn:
        for how in WAYS:
            schema = f"kmms_batches_{how}"
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            with conn.transaction():
                for stmt in projection.ddl(schema):
                    conn.execute(stmt)  # type: ignore[arg-type]
            if how == "reference":
                monkeypatch.setattr(kmms_model, "fold_events", _one_statement_an_event_all)
            for batch in _cuts(records, how, random.Random(seed)):
                with conn.transaction(), conn.cursor() as cur:
                    projection.fold(cur, schema, batch)
            digests[how] = table_digests(conn, projection, schema)
        # A re-delivered log (a crash before the offsets' commit) changes nothing: every COPY meets rows already
        # stored and goes through its session-local table, vectors (binary COPY) and rows alike.
        with conn.transaction(), conn.cursor() as cur:
            projection.fold(cur, "kmms_batches_one", records)
        again = table_digests(conn, projection, "kmms_batches_one")
        rows = conn.execute("SELECT count(*) FROM kmms_batches_one.kmms_nodes").fetchone()
        for how in WAYS:
            conn.execute(f"DROP SCHEMA kmms_batches_{how} CASCADE")
    assert rows is not None and int(str(rows[0])) > 0  # the log made a model to compare
    assert digests["each"] == digests["one"]
    assert digests["random"] == digests["one"]
    assert digests["reference"] == digests["one"]
    assert again == digests["one"]


def _one_statement_an_event_all(cur: Cur, s: str, events: list[KmmsEvent]) -> None:
    for ev in events:
        _one_statement_an_event(cur, s, ev)


def _one_statement_an_event(cur: Cur, s: str, ev: KmmsEvent) -> None:
    """The fold as it was before batches (one statement or more an event): the reference."""
    who = (ev.tenant, ev.claw_id, ev.scope)
    if ev.kind == "EPISODE_STORED" and ev.episode is not None:
        e = ev.episode
        cur.execute(
            f"INSERT INTO {s}.kmms_episodes ({_EP}, turn_layout) VALUES ({', '.join(['%s'] * 15)}) "
            "ON CONFLICT DO NOTHING",
            (*who, e.episode_id, e.session_id, e.thread_id, e.content_type, e.occurred_at, e.content,
             e.content_hash, e.redacted, ev.related_id, ev.event_id, ev.at, Jsonb(turn_layout(e.turns))),
        )  # fmt: skip
        cur.executemany(
            f"INSERT INTO {s}.kmms_units (tenant, claw_id, scope, unit_id, episode_id, session_id, thread_id, "
            "ordinal, text, occurred_at, logged_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT DO NOTHING",
            [(*who, u.unit_id, e.episode_id, e.session_id, e.thread_id, u.ordinal, u.text, e.occurred_at, ev.at)
             for u in units_of(e)],
        )  # fmt: skip
    elif ev.kind == "EPISODE_ENRICHED" and ev.enrichment is not None:
        en = ev.enrichment
        cur.execute(
            f"UPDATE {s}.kmms_episodes SET primary_entity = %s, primary_topic = %s, entities = %s, topics = %s "
            "WHERE tenant = %s AND episode_id = %s",
            (en.primary_entity, en.primary_topic, [x.name for x in en.entities], en.topics, ev.tenant,
             en.episode_id),
        )  # fmt: skip
        terms = {("entity", x.name, x.kind) for x in en.entities} | {("topic", t, None) for t in en.topics}
        cur.executemany(
            f"INSERT INTO {s}.kmms_l0 AS l VALUES (%s, %s, %s, %s, %s, %s, %s, 1) "
            "ON CONFLICT (tenant, claw_id, scope, kind, term) DO UPDATE SET episodes = l.episodes + 1",
            [(*who, kind, term.lower(), ek, ev.at) for kind, term, ek in sorted(terms, key=str)],
        )
    elif ev.kind == "NODE_CREATED" and ev.node is not None:
        n = ev.node
        cur.execute(
            f"INSERT INTO {s}.kmms_nodes ({_NODE}) VALUES ({', '.join(['%s'] * 23)}) ON CONFLICT DO NOTHING",
            (*who, n.node_id, n.layer, n.entity, n.topic, n.time_window, n.content, n.version, n.supersedes,
             n.valid_from, n.event_time, n.fact_key, n.fact_value, n.fact_type, n.confidence, n.context,
             n.source_ids, n.model, ev.at, ev.at,
             fact_terms(n.entity, n.fact_key, n.fact_value or "") if n.fact_key else ""),
        )  # fmt: skip
    elif ev.kind == "NODE_SUPERSEDED" and ev.node_id:
        cur.execute(
            f"UPDATE {s}.kmms_nodes SET status = 'SUPERSEDED', superseded_by = %s, valid_until = %s "
            "WHERE tenant = %s AND node_id = %s",
            (ev.related_id, None if ev.value is None else int(ev.value), ev.tenant, ev.node_id),
        )
    elif ev.kind == "NODE_REINFORCED" and ev.node_id:
        cur.execute(
            f"UPDATE {s}.kmms_nodes SET strength = %s, reinforcements = reinforcements + 1, last_verified = %s, "
            "source_ids = CASE WHEN %s::text = ANY(source_ids) THEN source_ids "
            "ELSE array_append(source_ids, %s::text) END "
            "WHERE tenant = %s AND node_id = %s",
            (ev.value, ev.at, ev.related_id, ev.related_id, ev.tenant, ev.node_id),
        )
    elif ev.kind == "NODE_VERIFIED" and ev.node_id:
        cur.execute(f"UPDATE {s}.kmms_nodes SET last_verified = %s WHERE tenant = %s AND node_id = %s",
                    (ev.at, ev.tenant, ev.node_id))  # fmt: skip
    elif ev.kind == "CONTRADICTION_LOGGED" and ev.node_id and ev.related_id:
        cls, _, resolution = (ev.detail or "direct:flag_for_review").partition(":")
        cur.execute(
            f"INSERT INTO {s}.kmms_contradictions VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
            (*who, ev.event_id, ev.node_id, ev.related_id, cls, resolution, ev.at),
        )
        if resolution == "flag_for_review":
            cur.execute(f"UPDATE {s}.kmms_nodes SET flagged = true WHERE tenant = %s AND node_id = ANY(%s)",
                        (ev.tenant, [ev.node_id, ev.related_id]))  # fmt: skip
