"""Rank fusion for hybrid retrieval (vector + full text), and rolling unit hits up to their parents.

RRF (Cormack et al. 2009): ``score(d) = Σ_i w_i / (k + rank_i(d))``, ranks from 1, k = 60 by default.
It needs no score calibration between retrievers, which is why we use it to merge cosine and BM25.

Decisions: an id repeated within one ranking counts once, at its best (first) rank; an id absent from
a ranking gets nothing from it; the output is ordered by score descending then id ascending so every
replica returns the same list; sums use ``math.fsum`` so the order of rankings does not change a
score in its last bit. ``aggregate_max`` keeps a parent's best unit score (a session is as relevant as
its most relevant chunk) and ignores NaN scores.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

RRF_K = 60


def rrf(
    rankings: Sequence[Sequence[str]], k: int = RRF_K, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if weights is None:
        weights = [1.0] * len(rankings)
    elif len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    parts: dict[str, list[float]] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        seen: set[str] = set()
        for rank, doc in enumerate(ranking, start=1):
            if doc in seen:
                continue
            seen.add(doc)
            parts.setdefault(doc, []).append(weight / (k + rank))
    fused = [(doc, math.fsum(p)) for doc, p in parts.items()]
    fused.sort(key=lambda t: (-t[1], t[0]))
    return fused


def aggregate_max(hits: Iterable[tuple[str, str, float]]) -> list[tuple[str, float]]:
    """``(unit_id, parent_id, score)`` hits -> ``(parent_id, best score)``, score desc then id asc."""
    best: dict[str, float] = {}
    for _unit, parent, s in hits:
        if math.isnan(s):
            continue
        if parent not in best or s > best[parent]:
            best[parent] = s
    return sorted(best.items(), key=lambda t: (-t[1], t[0]))
