"""The KMMS read model's fold of a run of events (no erasure among them), in a few statements a run.

One statement or more per event (an episode's row and its units, an enrichment's update and L0 terms, a node,
each update of a node) was most of a KMMS replay's time in round trips. Here a run is folded in memory first,
exactly as those statements would have left the tables, then written in one go:

- one query reads what the run's events find already stored: the episodes it stores again, the nodes it
  creates, changes or flags;
- the events are applied in log order to that state: a second copy of a stored episode or node is skipped
  (``ON CONFLICT DO NOTHING`` did that), an update of a node neither stored nor created before it changes
  nothing (an ``UPDATE`` matched no row), an enrichment lands on its episode's pending row or, for a stored
  episode, is kept (the last one wins);
- the L0 terms are counted per key (the first occurrence gives ``first_seen``, the count is added);
- then: new episodes, units, nodes and contradictions by ``copy_insert``; the enrichments and node changes of
  stored rows by one ``executemany`` each; the L0 counts by one upsert.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from contracts.kmms_records import KmmsEvent, KmmsNode
from governance.kmms.phrasing import fact_terms
from governance.kmms.units import units_of
from governance.transcripts import turn_layout
from projections.kmms.sql import UNIT_OF_SQL
from projections.read_models import copy_insert

Cur = psycopg.Cursor[tuple[object, ...]]
Key = tuple[str, str]  # tenant, id
EP_COLUMNS = ("tenant, claw_id, scope, episode_id, session_id, thread_id, content_type, occurred_at, content, "
              "content_hash, redacted, envelope_event_id, event_id, logged_at")  # fmt: skip
_ENRICHED = "primary_entity, primary_topic, entities, topics"
_EP_ROW = f"{EP_COLUMNS}, {_ENRICHED}, turn_layout"
NODE_COLUMNS = ("tenant, claw_id, scope, node_id, layer, entity, topic, time_window, content, version, supersedes, "
                "valid_from, event_time, fact_key, fact_value, fact_type, confidence, context, source_ids, model, "
                "logged_at, last_verified, cues")  # fmt: skip
_NODE_STATE = "status, superseded_by, valid_until, strength, reinforcements, flagged"
_UNIT_COLUMNS = (
    "tenant, claw_id, scope, unit_id, episode_id, session_id, thread_id, ordinal, text, occurred_at, logged_at"
)


@dataclass
class _NodeState:
    """What events after its creation change in a node's row."""

    source_ids: list[str]
    last_verified: int | None
    status: str = "CURRENT"
    superseded_by: str | None = None
    valid_until: int | None = None
    strength: float = 1.0
    reinforcements: int = 0
    flagged: bool = False
    changed: bool = False


@dataclass
class _NewNode:
    who: tuple[str, str, str]
    node: KmmsNode
    at: int
    state: _NodeState


@dataclass
class _Run:
    stored_episodes: set[Key]
    nodes: dict[Key, _NodeState]  # stored before the run, or created in it
    new_nodes: dict[Key, _NewNode] = field(default_factory=dict)
    new_episodes: dict[Key, list[Any]] = field(default_factory=dict)  # row: _EP_ROW
    enrichments: dict[Key, tuple[Any, ...]] = field(default_factory=dict)  # of stored episodes
    units: dict[Key, tuple[Any, ...]] = field(default_factory=dict)
    l0: dict[tuple[str, ...], list[Any]] = field(default_factory=dict)  # key -> [entity kind, first seen, count]
    contradictions: dict[Key, tuple[Any, ...]] = field(default_factory=dict)


def fold_events(cur: Cur, s: str, events: list[KmmsEvent]) -> None:
    """Fold ``events`` (log order, no erasure among them) into schema ``s``."""
    if not events:
        return
    run = _Run(*_stored(cur, s, events))
    for ev in events:
        _apply(run, ev)
    _write(cur, s, run)


def _stored(cur: Cur, s: str, events: list[KmmsEvent]) -> tuple[set[Key], dict[Key, _NodeState]]:
    episodes = sorted({(ev.tenant, ev.episode.episode_id) for ev in events
                       if ev.kind == "EPISODE_STORED" and ev.episode is not None})  # fmt: skip
    nodes: set[Key] = set()
    for ev in events:
        if ev.kind == "NODE_CREATED" and ev.node is not None:
            nodes.add((ev.tenant, ev.node.node_id))
        elif ev.node_id:
            nodes.add((ev.tenant, ev.node_id))
            if ev.kind == "CONTRADICTION_LOGGED" and ev.related_id:
                nodes.add((ev.tenant, ev.related_id))
    stored_episodes: set[Key] = set()
    if episodes:
        t, e = (list(c) for c in zip(*episodes, strict=True))
        cur.execute(f"SELECT tenant, episode_id FROM {s}.kmms_episodes WHERE (tenant, episode_id) IN "
                    "(SELECT * FROM unnest(%s::text[], %s::text[]))", (t, e))  # fmt: skip
        stored_episodes = {(str(r[0]), str(r[1])) for r in cur.fetchall()}
    stored_nodes: dict[Key, _NodeState] = {}
    if nodes:
        t, n = (list(c) for c in zip(*sorted(nodes), strict=True))
        cur.execute(f"SELECT tenant, node_id, source_ids, last_verified, {_NODE_STATE} FROM {s}.kmms_nodes "
                    "WHERE (tenant, node_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))", (t, n))  # fmt: skip
        for r in cur.fetchall():
            row: Any = r
            stored_nodes[(row[0], row[1])] = _NodeState(list(row[2]), row[3], *row[4:])
    return stored_episodes, stored_nodes


def _apply(run: _Run, ev: KmmsEvent) -> None:
    who = (ev.tenant, ev.claw_id, ev.scope)
    if ev.kind == "EPISODE_STORED" and ev.episode is not None:
        e = ev.episode
        key = (ev.tenant, e.episode_id)
        if key not in run.stored_episodes and key not in run.new_episodes:
            run.new_episodes[key] = [*who, e.episode_id, e.session_id, e.thread_id, e.content_type, e.occurred_at,
                                     e.content, e.content_hash, e.redacted, ev.related_id, ev.event_id, ev.at,
                                     None, None, [], [], Jsonb(turn_layout(e.turns))]  # fmt: skip
        for u in units_of(e):
            run.units.setdefault(
                (ev.tenant, u.unit_id),
                (*who, u.unit_id, e.episode_id, e.session_id, e.thread_id, u.ordinal, u.text, e.occurred_at, ev.at),
            )
    elif ev.kind == "EPISODE_ENRICHED" and ev.enrichment is not None:
        en = ev.enrichment
        key = (ev.tenant, en.episode_id)
        values = (en.primary_entity, en.primary_topic, [x.name for x in en.entities], en.topics)
        if key in run.new_episodes:
            run.new_episodes[key][14:18] = values
        else:  # an update of a stored episode (or of none: it then changes nothing)
            run.enrichments[key] = values
        terms = {("entity", x.name, x.kind) for x in en.entities} | {("topic", t, None) for t in en.topics}
        for kind, term, entity_kind in sorted(terms, key=str):
            count = run.l0.setdefault((*who, kind, term.lower()), [entity_kind, ev.at, 0])
            count[2] += 1
    elif ev.kind == "NODE_CREATED" and ev.node is not None:
        key = (ev.tenant, ev.node.node_id)
        if key not in run.nodes:
            state = _NodeState(list(ev.node.source_ids), ev.at)
            run.nodes[key] = state
            run.new_nodes[key] = _NewNode(who, ev.node, ev.at, state)
    elif ev.kind == "CONTRADICTION_LOGGED" and ev.node_id and ev.related_id:
        cls, _, resolution = (ev.detail or "direct:flag_for_review").partition(":")
        row = (*who, ev.event_id, ev.node_id, ev.related_id, cls, resolution, ev.at)
        run.contradictions.setdefault((ev.tenant, ev.event_id), row)
        if resolution == "flag_for_review":
            for node_id in (ev.node_id, ev.related_id):
                if (flagged := run.nodes.get((ev.tenant, node_id))) is not None:
                    flagged.flagged = flagged.changed = True
    elif ev.node_id and (changed := run.nodes.get((ev.tenant, ev.node_id))) is not None:
        _change(changed, ev)


def _change(state: _NodeState, ev: KmmsEvent) -> None:
    if ev.kind == "NODE_SUPERSEDED":
        state.status, state.superseded_by = "SUPERSEDED", ev.related_id
        state.valid_until = None if ev.value is None else int(ev.value)
    elif ev.kind == "NODE_REINFORCED":
        state.strength, state.last_verified = ev.value, ev.at  # type: ignore[assignment]
        state.reinforcements += 1
        # As ``CASE WHEN x = ANY(source_ids) ... ELSE array_append(...)`` did: a missing id (NULL) is appended.
        if ev.related_id is None or ev.related_id not in state.source_ids:
            state.source_ids.append(ev.related_id)  # type: ignore[arg-type]
    elif ev.kind == "NODE_VERIFIED":
        state.last_verified = ev.at
    else:
        return
    state.changed = True


def _write(cur: Cur, s: str, run: _Run) -> None:
    if run.enrichments:  # before the new episodes: an enrichment logged before its episode changed nothing
        cur.executemany(f"UPDATE {s}.kmms_episodes SET primary_entity = %s, primary_topic = %s, entities = %s, "
                        "topics = %s WHERE tenant = %s AND episode_id = %s",
                        [(*v, *k) for k, v in run.enrichments.items()])  # fmt: skip
    copy_insert(cur, s, "kmms_episodes", _EP_ROW, [tuple(r) for r in run.new_episodes.values()])
    copy_insert(cur, s, "kmms_units", _UNIT_COLUMNS, list(run.units.values()))
    time_untimed_vectors(cur, s, [(str(r[0]), str(r[3]), int(str(r[9]))) for r in run.units.values()])
    if run.l0:
        cols: list[list[Any]] = [[] for _ in range(8)]
        for key, (entity_kind, first_seen, count) in run.l0.items():
            for col, v in zip(cols, (*key, entity_kind, first_seen, count), strict=True):
                col.append(v)
        cur.execute(f"INSERT INTO {s}.kmms_l0 AS l SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], "
                    "%s::text[], %s::text[], %s::text[], %s::bigint[], %s::int[]) "
                    "ON CONFLICT (tenant, claw_id, scope, kind, term) DO UPDATE SET episodes = l.episodes + "
                    "excluded.episodes", cols)  # fmt: skip
    copy_insert(cur, s, "kmms_nodes", f"{NODE_COLUMNS}, {_NODE_STATE}", [_node_row(n) for n in run.new_nodes.values()])
    changed = [(k, st) for k, st in run.nodes.items() if st.changed and k not in run.new_nodes]
    if changed:
        cur.executemany(f"UPDATE {s}.kmms_nodes SET source_ids = %s, last_verified = %s, status = %s, "
                        "superseded_by = %s, valid_until = %s, strength = %s, reinforcements = %s, flagged = %s "
                        "WHERE tenant = %s AND node_id = %s",
                        [(st.source_ids, st.last_verified, st.status, st.superseded_by, st.valid_until, st.strength,
                          st.reinforcements, st.flagged, *k) for k, st in changed])  # fmt: skip
    copy_insert(cur, s, "kmms_contradictions", "tenant, claw_id, scope, event_id, old_node, new_node, class, "
                "resolution, at", list(run.contradictions.values()))  # fmt: skip


def _node_row(x: _NewNode) -> tuple[Any, ...]:
    n, st = x.node, x.state
    cues = fact_terms(n.entity, n.fact_key, n.fact_value or "") if n.fact_key else ""
    return (*x.who, n.node_id, n.layer, n.entity, n.topic, n.time_window, n.content, n.version, n.supersedes,
            n.valid_from, n.event_time, n.fact_key, n.fact_value, n.fact_type, n.confidence, n.context,
            st.source_ids, n.model, x.at, st.last_verified, cues, st.status, st.superseded_by, st.valid_until,
            st.strength, st.reinforcements, st.flagged)  # fmt: skip


def time_untimed_vectors(cur: Cur, s: str, units: list[tuple[str, str, int]]) -> None:
    """Give the vectors folded before their unit (another topic: a replay may fold them first) the event time of
    ``units`` (tenant, unit id, occurred_at), the units just folded. Nearly always none: one probe of the index of
    untimed vectors (by their unit's id) per unit."""
    if not units:
        return
    t, u, at = (list(c) for c in zip(*units, strict=True))
    cur.execute(TIME_UNTIMED.format(s=s), (t, u, at, sorted(set(t)), u))


# The vectors of the rounds (tenant, unit id, time: three arrays, then the tenants and unit ids again) that have no
# time yet get it. The two ``= ANY`` are the untimed index's conditions (one probe per round), the join pairs them.
TIME_UNTIMED = ("UPDATE {s}.kmms_vectors v SET occurred_at = x.at FROM unnest(%s::text[], %s::text[], %s::bigint[]) "
                "AS x(tenant, unit_id, at) WHERE v.occurred_at IS NULL AND v.kind IN ('unit', 'sentence') "
                f"AND v.tenant = ANY(%s::text[]) AND {UNIT_OF_SQL.format(v='v')} = ANY(%s::text[]) "
                f"AND v.tenant = x.tenant AND {UNIT_OF_SQL.format(v='v')} = x.unit_id")  # fmt: skip
