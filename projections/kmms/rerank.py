"""The first stage's hits, ordered for the question: a time window's and all time's, searched side by side and
put in one order (``first_stage``; the order's rules are ``governance.kmms.ranking``'s); and, for a question about
the present (CURRENT), the current facts that a later hit may have changed (``outdated_facts``, the rule of
``governance.kmms.recency``), with the hits' similarities it reads from the memory."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from psycopg_pool import AsyncConnectionPool

from governance.kmms.ranking import window_order
from governance.kmms.recency import FactEvidence, newer_in_topic, topics_of
from governance.kmms.search_config import SearchConfig
from projections.kmms.nearest import spare
from projections.kmms.nodes import NodeRow
from projections.kmms.search import Memory, Mode, UnitHit, unit_candidates, unit_similarities
from projections.queries import side_by_side


async def first_stage(conn: Any, pool: AsyncConnectionPool, m: Memory, vector: list[float] | None, model: str,
                      text: str, mode: Mode, bound: int, start: int | None, as_of: int, n: int, *,
                      cfg: SearchConfig, tokens: np.ndarray | None = None) -> list[UnitHit]:  # fmt: skip
    """The first stage's ``n`` best units up to ``bound`` (from ``start``); for a time window (``start``, or a
    ``bound`` before ``as_of``), the window's and the rest of time's up to ``as_of`` in one order
    (``window_order``), the two searched side by side on two of the pool's connections when it has one to spare.
    ``tokens``: the question's token states (``unit_candidates``)."""
    if start is None and bound >= as_of:  # no window: the units rank their episodes as they come
        return await unit_candidates(conn, m, vector, model, text, mode, bound, start, n, pool, cfg=cfg,
                                     best_only=True, tokens=tokens)  # fmt: skip
    window = unit_candidates(conn, m, vector, model, text, mode, bound, start, n, pool, cfg=cfg, tokens=tokens)

    async def rest_of_time(c: Any) -> list[UnitHit]:
        return await unit_candidates(c, m, vector, model, text, mode, as_of, None, n, cfg=cfg, tokens=tokens)

    if spare(pool):
        return window_order(*await side_by_side(conn, pool, m.tenant, window, rest_of_time), cfg)
    return window_order(await window, await rest_of_time(conn), cfg)


async def hit_similarities(conn: Any, m: Memory, model: str, ranked: list[UnitHit]) -> dict[tuple[str, str], float]:
    """The similarities of the hits' own vectors, keyed (a, b), a < b, for ``outdated_facts``."""
    if len(ranked) < 2:
        return {}
    return await unit_similarities(conn, m, model, [u.unit_id for u in ranked])


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
