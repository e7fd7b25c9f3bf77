"""Pseudo-relevance feedback (Rocchio 1971) over the first stage's candidates.

A question and its evidence may share no words and little of a sentence embedding's sense: "Which concerts have
I been to?" and "I saw Hozier live on Friday, what a show." score 0.19 with all-MiniLM-L6-v2, under small talk
that sounds like a question. But the first stage usually ranks one piece of the evidence high ("we went to the
Arcade Fire concert last night"), and that piece is close to the rest. So the candidates are ranked a second
time, by their similarity to the question moved toward its best candidates,

    q' = q + beta · mean(t_1 … t_m),    t_i the best vector of each of the first stage's m best units,

and the two orders are fused by reciprocal rank (``weight``; ``governance.kmms.fusion.rrf``): a candidate the
moved question likes rises, but no single ranking decides alone. The best candidate stays first: it anchors the
moved question, and on bench memory letting the centroid of the m best re-rank it cost a twentieth of the
questions their top answer (R@1 65 -> 61 %) for no recall. The scores stay those of the places (the candidate
now i-th takes the i-th score): what reads them after (recency, the drill from a fact to its evidence) sees the
same distribution; giving the fused ranks' own scores instead made their near-ties recency's to break (R@1 -3).

Decisions: only the first stage's candidates are ranked again (no second index scan, so the search costs one
more column of the statement that reads its candidates, not another scan of the memory); a unit's similarity
to q' is its best vector's less its voice's adjustment, as the first stage reads similarity
(``projections.kmms.sql.FEEDBACK_SIMILARITIES``); a candidate without a vector yet ranks last; ties keep the
first stage's order. What a hit reports (similarity, confidence, abstention) stays the question's own: feedback
only orders.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from governance.kmms.fusion import RRF_K, rrf


def feedback_order(fused: Sequence[tuple[str, float]], similarity: Mapping[str, float | None], weight: float,
                   k: int = RRF_K) -> list[tuple[str, float]]:  # fmt: skip
    """``fused`` (the first stage's candidates and their scores, best first) in their new order: the first
    stays first, the rest by the reciprocal-rank fusion of their order in ``fused`` and their order by
    ``similarity`` to the moved question (``weight``). The scores stay those of the places: the candidate now
    i-th takes the i-th score, so what reads the scores after (recency, the drill to a fact's evidence) sees
    the same distribution. Fewer than three candidates are left as they are (the first stays first)."""
    if weight < 0:
        raise ValueError(f"weight must be >= 0, got {weight}")
    if len(fused) < 3:
        return list(fused)
    rest = [u for u, _ in fused[1:]]
    place = {u: i for i, u in enumerate(rest)}
    by_feedback = sorted(rest, key=lambda u: (similarity.get(u) is None, -(similarity.get(u) or 0.0), place[u]))
    order = [fused[0][0], *(u for u, _ in rrf([rest, by_feedback], k, [1.0, weight]))]
    return list(zip(order, (s for _, s in fused), strict=True))
