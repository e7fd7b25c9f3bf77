"""The first stage's hits, ordered for the question: a time window's and all time's, searched side by side and
put in one order (``first_stage``; the order's rules are ``governance.kmms.ranking``'s), and for a question about
the present (CURRENT) the rules of ``governance.kmms.recency`` with what they need from the memory: its vectors'
similarities (newest first, a fact a later hit may have changed) and the later rounds naming a fact's value
(``named_changes``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from psycopg_pool import AsyncConnectionPool

from governance.kmms.drill import FactCandidate, facts_to_drill
from governance.kmms.ranking import window_order
from governance.kmms.recency import (
    FactEvidence,
    later_change,
    names_value,
    newer_in_topic,
    newest_first_within_topics,
    topics_of,
)
from governance.kmms.search_config import SearchConfig
from projections.kmms.nearest import spare
from projections.kmms.nodes import NodeRow
from projections.kmms.search import (
    Memory,
    Mode,
    UnitHit,
    unit_candidates,
    unit_hit,
    unit_similarities,
)
from projections.kmms.sql import UNIT_SIMILARITIES, vector_literal
from projections.queries import side_by_side

# The thresholds of the rules below are settings (governance/kmms/search_config.py; docs/kmms.md, "Retrieval"): two hits
# this similar tell of the same thing (``same_topic``), a current fact and a later hit this similar (``fact_topic``),
# the newest candidate's gain on a question about the present (``recency``), a window's margin (``window_margin``).

# A current fact's value named with a change word by what its owner said later (``recency.later_change``): the
# facts looked at are those of at least ``SearchConfig.change_similarity`` to the question (> 1: off), at most
# CHANGE_FACTS of them, and of each the CHANGE_CANDIDATES latest rounds naming its value are read.
CHANGE_FACTS, CHANGE_CANDIDATES = 2, 10


async def first_stage(conn: Any, pool: AsyncConnectionPool, m: Memory, vector: list[float] | None, model: str,
                      text: str, mode: Mode, bound: int, start: int | None, as_of: int, n: int,
                      voices: dict[str, float], said: bool, *, cfg: SearchConfig) -> list[UnitHit]:  # fmt: skip
    """The first stage's ``n`` best units up to ``bound`` (from ``start``); for a time window (``start``, or a
    ``bound`` before ``as_of``), the window's, then the rest of time's up to ``as_of`` (``window_first``), the two
    searched side by side on two of the pool's connections when it has one to spare."""
    if start is None and bound >= as_of:  # no window: the units rank their episodes as they come
        return await unit_candidates(conn, m, vector, model, text, mode, bound, start, n, pool, voices, said,
                                     cfg=cfg, best_only=True)  # fmt: skip
    window = unit_candidates(conn, m, vector, model, text, mode, bound, start, n, pool, voices, said, cfg=cfg)

    async def rest_of_time(c: Any) -> list[UnitHit]:
        return await unit_candidates(c, m, vector, model, text, mode, as_of, None, n, voices=voices, said=said,
                                     cfg=cfg)  # fmt: skip

    if spare(pool):
        return window_order(*await side_by_side(conn, pool, m.tenant, window, rest_of_time), cfg)
    return window_order(await window, await rest_of_time(conn), cfg)


async def newest_first(conn: Any, m: Memory, model: str, ranked: list[UnitHit],
                       same_topic: float) -> tuple[list[UnitHit], dict[tuple[str, str], float]]:  # fmt: skip
    """Hits about the same thing take their places newest first; returned with the similarities of their units
    (keyed (a, b), a < b), for ``outdated_facts``. Hits at least ``same_topic`` similar are about the same thing
    (> 1: off)."""
    if len(ranked) < 2 or same_topic > 1:
        return ranked, {}
    pairs = await unit_similarities(conn, m, model, [u.unit_id for u in ranked])
    order = newest_first_within_topics([u.occurred_at for u in ranked], _similar(ranked, pairs), same_topic)
    return [ranked[i] for i in order], pairs


def _similar(ranked: list[UnitHit], pairs: dict[tuple[str, str], float]) -> Callable[[int, int], float | None]:
    def similar(i: int, j: int) -> float | None:
        a, b = sorted((ranked[i].unit_id, ranked[j].unit_id))
        return pairs.get((a, b))

    return similar


async def outdated_facts(conn: Any, m: Memory, ranked: list[UnitHit], pairs: dict[tuple[str, str], float],
                         facts: list[NodeRow], fact_topic: float) -> dict[str, int]:  # fmt: skip
    """Current L2 facts that a later hit on their topic may have changed (``governance.kmms.recency``): node id ->
    the index in ``ranked`` of that hit. A fact's episodes are its sources, or its sources' sources (an L3
    summary's episodes). A later hit at least ``fact_topic`` similar is on the fact's topic (> 1: off)."""
    facts = [f for f in facts if f.layer == 2 and f.status == "CURRENT"]
    if not facts or not pairs or fact_topic > 1:
        return {}
    sources = sorted({s for f in facts for s in f.source_ids})
    cur = await conn.execute("SELECT node_id, source_ids FROM kmms.kmms_nodes WHERE tenant = %s AND node_id = ANY(%s)",
                             (m.tenant, sources))  # fmt: skip
    below = {str(r[0]): [str(x) for x in r[1] or []] for r in await cur.fetchall()}
    episodes = {f.node_id: {e for s in f.source_ids for e in below.get(s, [s])} for f in facts}
    cur = await conn.execute(
        "SELECT episode_id, occurred_at FROM kmms.kmms_episodes WHERE tenant = %s AND episode_id = ANY(%s)",
        (m.tenant, sorted({e for eps in episodes.values() for e in eps})),
    )
    at = {str(r[0]): int(str(r[1])) for r in await cur.fetchall()}
    hits = [(u.episode_id, u.occurred_at, u.text, u.similarity) for u in ranked]
    topic = topics_of(len(ranked), _similar(ranked, pairs), fact_topic)
    out: dict[str, int] = {}
    for f in facts:
        eps = episodes[f.node_id]
        latest = max([f.valid_from, *(at[e] for e in eps if e in at)])
        j = newer_in_topic(hits, topic, FactEvidence(eps, latest, f.fact_value))
        if j is not None:
            out[f.node_id] = j
    return out


async def named_changes(conn: Any, m: Memory, ranked: list[UnitHit], nodes: list[NodeRow], outdated: dict[str, int],
                        as_of: int, k: int, vector: list[float] | None, model: str,
                        voices: dict[str, float],
                        change_similarity: float) -> tuple[list[UnitHit], dict[str, int]]:  # fmt: skip
    """On a question about the present, the question's best current facts (``change_similarity``; > 1: off) each
    with the newest later round whose owner names the fact's value with a change word ("forget Severance, I'm obsessed
    with Fleabag now"; ``recency.later_change``), found by the value's words: one statement. Such a round joins
    ``ranked`` (in its first ``k``) before the first hit naming the value, and the fact is outdated by it
    (``outdated``: node id -> index in the returned ranking)."""
    if change_similarity > 1:
        return ranked, outdated
    current = [n for n in nodes if n.layer == 2 and n.status == "CURRENT" and n.fact_value and n.valid_until is None]
    chosen = facts_to_drill([FactCandidate(n.node_id, n.layer, n.fact_key, n.similarity) for n in current],
                            change_similarity, CHANGE_FACTS)  # fmt: skip
    if not chosen:
        return ranked, outdated
    by_id = {n.node_id: n for n in current}
    facts = [by_id[f] for f in chosen]
    latest = [max(f.valid_from, f.event_time) for f in facts]  # later than this, a round may tell a change
    p = {"t": m.tenant, "c": m.claw_id, "s": m.scope, "th": m.thread_id, "as_of": as_of, "model": model,
         "cap": CHANGE_CANDIDATES, "values": [f.fact_value for f in facts],
         "latest": latest, "v_asked": voices.get("asked", 0.0),
         "v_told": voices.get("told", 0.0), "v_reply": voices.get("reply", 0.0)}  # fmt: skip
    sims = "NULL::float8[]"
    if vector is not None:
        p["q"], sims = vector_literal(vector), UNIT_SIMILARITIES
    # Through kmms.unit_said_matches (migration 27): under row-level security a plain query could not use the
    # text index of the owner's words.
    cur = await conn.execute(
        "SELECT f.i, u.unit_id, u.episode_id, u.session_id, u.thread_id, u.text, u.occurred_at, u.logged_at, "
        f"{sims}, u.said FROM unnest(%(values)s::text[], %(latest)s::bigint[]) WITH ORDINALITY AS f(value, latest, i) "
        "CROSS JOIN LATERAL kmms.unit_said_matches(%(c)s, %(s)s, phraseto_tsquery('english', f.value), f.latest + 1, "
        "%(as_of)s, %(th)s, %(cap)s) mt JOIN kmms.kmms_units u ON u.tenant = %(t)s AND u.unit_id = mt.unit_id "
        "ORDER BY f.i, u.occurred_at, u.unit_id",
        p,
    )
    found: dict[int, list[tuple[UnitHit, str]]] = {}
    for r in await cur.fetchall():
        found.setdefault(int(r[0]) - 1, []).append((unit_hit(r[1:9], 0.0), str(r[9] or "")))
    out = list(ranked)
    changed = {f: out[j].episode_id for f, j in outdated.items() if j < len(out)}
    for i, f in enumerate(facts):
        rows = found.get(i, [])
        j = later_change([(u.episode_id, u.occurred_at, said) for u, said in rows],
                         FactEvidence((), latest[i], f.fact_value))  # fmt: skip
        if j is None:
            continue
        hit = rows[j][0]
        at = [x for x, u in enumerate(out) if u.episode_id == hit.episode_id]
        if at:
            hit = out.pop(at[0])
        names = [x for x, u in enumerate(out) if x < k and names_value(u.text, f.fact_value)]
        place = min([*names, *at, min(len(out), k - 1)])
        out.insert(place, replace(hit, fused=out[place].fused if place < len(out) else hit.fused))
        changed[f.node_id] = hit.episode_id
    index = {u.episode_id: x for x, u in enumerate(out)}
    return out, {f: index[e] for f, e in changed.items() if e in index}
