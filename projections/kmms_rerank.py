"""The first stage's hits, ordered for the question: each episode by its best unit, and for a question
about the present (CURRENT) the rule of ``governance.kmms.recency`` with the similarities it needs,
read from the memory's vectors."""

from __future__ import annotations

import os
from typing import Any

from governance.kmms.recency import newest_first_within_topics
from projections.kmms_search import Memory, UnitHit, unit_similarities

RECENCY = float(os.environ.get("HIVEMEM_KMMS_RECENCY", "0.05"))  # docs/kmms.md, "Retrieval"
# Two hits whose vectors are this similar tell of the same thing (> 1: off); docs/kmms.md, "Retrieval".
SAME_TOPIC = float(os.environ.get("HIVEMEM_KMMS_SAME_TOPIC", "0.45"))


def best_units(units: list[UnitHit], recency: float = 0.0) -> list[UnitHit]:
    """Each episode's best unit, ranked (the episode's place is its best unit's)."""
    best: dict[str, UnitHit] = {}
    for u in units:  # already in fused order: the first unit of an episode is its best
        best.setdefault(u.episode_id, u)
    ranked = list(best.values())
    if recency > 0 and len(ranked) > 1:
        # A question about the present: of two episodes about as relevant, the later one tells the current
        # state ("I don't go to The Daily Grind any more"); the newest candidate gains ``recency`` of its score.
        lo, hi = min(u.occurred_at for u in ranked), max(u.occurred_at for u in ranked)
        span = max(hi - lo, 1)
        ranked.sort(key=lambda u: -u.fused * (1 + recency * (u.occurred_at - lo) / span))
    return ranked


async def newest_first(conn: Any, m: Memory, model: str, ranked: list[UnitHit]) -> list[UnitHit]:
    """Hits about the same thing take their places newest first."""
    if len(ranked) < 2 or SAME_TOPIC > 1:
        return ranked
    pairs = await unit_similarities(conn, m, model, [u.unit_id for u in ranked])

    def similar(i: int, j: int) -> float | None:
        a, b = sorted((ranked[i].unit_id, ranked[j].unit_id))
        return pairs.get((a, b))

    return [ranked[i] for i in newest_first_within_topics([u.occurred_at for u in ranked], similar, SAME_TOPIC)]
