"""The drill from the question's best facts to their episodes (``governance.kmms.drill``), in SQL: which
episodes a fact was read from (its sources, or an L3 summary's sources), those of the version linked to it,
and each episode's best round for the question, bounded in time like the first stage."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from governance.kmms.drill import FactCandidate, evidence_order, facts_to_drill, merge_drilled
from governance.kmms.fusion import RRF_K
from governance.kmms.search_config import SearchConfig
from projections.kmms.nodes import NodeRow
from projections.kmms.search import Memory, UnitHit, unit_hit
from projections.kmms.sql import UNIT_SIMILARITIES, Conn, vector_literal

# A fact drills when its similarity to the question is at least ``SearchConfig.drill_similarity`` (> 1: off), its
# episodes fused with weight ``SearchConfig.drill_weight``; docs/kmms.md, "Retrieval". On bench memory the facts
# that answer a question sit at 0.27-0.65, others up to 0.37: 0.50 changed nothing.
DRILL_FACTS = 2  # at most this many facts drill


async def _evidence(conn: Conn, p: dict[str, Any]) -> tuple[dict[str, list[str]], dict[str, UnitHit]]:
    """One statement: each node's episodes, and each episode's best round for the question.

    A node's episodes: of its sources (an L3 summary among them standing for the summary's own), the one its
    statement was read from, whose time the fact took as its event time. Of the linked versions
    (``p["links"]``), only those valid and told by ``as_of`` (the time filter of ``queries.node_filter``):
    a later one may not steer the ranking. Episodes keep to the memory, its thread and ``as_of``. A round is
    judged by its best vector less its voice's adjustment, as in the first stage; the episodes' own time picks
    their rounds from the scope index."""
    cur = await conn.execute(  # type: ignore[arg-type]
        "WITH d AS MATERIALIZED (SELECT DISTINCT f.node_id, e.episode_id, e.occurred_at FROM kmms.kmms_nodes f "
        "CROSS JOIN LATERAL unnest(f.source_ids) AS src(id) "
        "LEFT JOIN kmms.kmms_nodes l3 ON l3.tenant = f.tenant AND l3.node_id = src.id "
        "CROSS JOIN LATERAL unnest(coalesce(l3.source_ids, ARRAY[src.id])) AS ep(id) "
        "JOIN kmms.kmms_episodes e ON e.tenant = f.tenant AND e.episode_id = ep.id "
        "WHERE f.tenant = %(t)s AND (f.node_id = ANY(%(facts)s) OR (f.node_id = ANY(%(links)s) "
        "AND f.valid_from <= %(as_of)s AND f.event_time <= %(as_of)s)) AND e.occurred_at = f.event_time "
        "AND e.claw_id = %(c)s AND e.scope = %(s)s AND e.occurred_at <= %(as_of)s "
        "AND (%(th)s::text IS NULL OR e.thread_id = %(th)s)) "
        "SELECT d.node_id, u.unit_id, u.episode_id, u.session_id, u.thread_id, u.text, u.occurred_at, u.logged_at, "
        f"{UNIT_SIMILARITIES} FROM d JOIN kmms.kmms_units u ON u.tenant = %(t)s AND u.claw_id = %(c)s "
        "AND u.scope = %(s)s AND u.occurred_at = d.occurred_at AND u.episode_id = d.episode_id "
        "ORDER BY d.node_id, u.episode_id",
        p,
    )
    episodes: dict[str, list[str]] = {}
    best: dict[str, UnitHit] = {}
    for r in await cur.fetchall():
        hit = unit_hit(r[1:], 0.0)
        eps = episodes.setdefault(str(r[0]), [])
        if hit.episode_id not in eps:
            eps.append(hit.episode_id)
        old = best.get(hit.episode_id)
        if old is None or (hit.voiced, old.unit_id) > (old.voiced, hit.unit_id):
            best[hit.episode_id] = hit
    return episodes, best


async def drill_facts(conn: Conn, m: Memory, ranked: list[UnitHit], nodes: list[NodeRow], kind: str, as_of: int,
                      vector: list[float] | None, model: str, voices: dict[str, float], *,
                      cfg: SearchConfig) -> list[UnitHit]:  # fmt: skip
    """``ranked`` (one best round per episode, in order) with the evidence of the question's best facts merged in
    (``governance.kmms.drill``). ``kind`` is the temporal intent: on a question about the present a fact's
    superseded version drills too, on one about a past moment the version that superseded it. A round's
    similarity is read as the first stage reads it (``vector``, ``model``, the voices' adjustments); episodes
    after ``as_of`` never join. ``cfg``: the drill's threshold and weight."""
    if vector is None or cfg.drill_similarity > 1:
        return ranked
    chosen = facts_to_drill([FactCandidate(n.node_id, n.layer, n.fact_key, n.similarity) for n in nodes],
                            cfg.drill_similarity, DRILL_FACTS)  # fmt: skip
    if not chosen:
        return ranked
    by_id = {n.node_id: n for n in nodes}
    link = {f: (by_id[f].supersedes if kind in ("CURRENT", "UNSPECIFIED") else
                by_id[f].superseded_by if kind == "POINT_IN_TIME" else None) for f in chosen}  # fmt: skip
    p = {"t": m.tenant, "c": m.claw_id, "s": m.scope, "th": m.thread_id, "model": model, "q": vector_literal(vector),
         "as_of": as_of, "facts": chosen, "links": [x for x in link.values() if x], "v_asked": voices.get("asked", 0.0),
         "v_told": voices.get("told", 0.0), "v_reply": voices.get("reply", 0.0)}  # fmt: skip
    episodes, best = await _evidence(conn, p)
    pairs = [(episodes.get(f, []), episodes.get(link[f] or "", [])) for f in chosen]
    order = evidence_order(pairs)
    after: dict[str, set[str]] = {}  # a linked version's episode comes after the fact's own
    for own, linked in pairs:
        for e in linked:
            after.setdefault(e, set()).update(x for x in own if x != e)
    have = best | {u.episode_id: u for u in ranked}  # an episode ranked already keeps its round and score
    merged = merge_drilled([(u.episode_id, u.fused) for u in ranked], [e for e in order if e in have], RRF_K,
                           cfg.drill_weight, after)  # fmt: skip
    return [replace(have[e], fused=s) for e, s in merged]
