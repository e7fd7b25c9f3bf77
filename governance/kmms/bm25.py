"""Okapi BM25, pure: the query's terms and each candidate's term frequencies in, scores out.

Postgres's ``ts_rank_cd`` has no inverse document frequency: with the OR query first-stage search
needs (one missing word must not drop a hit), a unit matching "I" and "did" ranks with one matching
the rare word the question is about. So the candidates (units of the memory holding at least one of
the query's lexemes) are ranked by this formula: idf from their document frequencies among the
candidates, term frequency from each ``tsvector``'s positions, length in lexemes (Postgres's
``length(tsv)``, the measure the memory's average is taken in). The search runs it in SQL, where the
candidates are (``projections.kmms.sql.bm25_ranking``, with ``K1`` and ``B`` from here);
``tests/integration/test_kmms_node_text.py`` holds that SQL to this function's ranking.

A unit is read with its neighbours (``windows``): its terms and those of the units before and after it in its
episode, its length and theirs. In SQL: ``kmms.unit_window_terms`` (migration 30), held to ``windows`` by
``tests/integration/test_kmms_text_neighbours.py``.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

K1, B = 1.2, 0.75
# A window's neighbour's occurrence of a term counts this much of the unit's own (``windows``): the unit's words
# say most of what it is about (a turn's speaker above all), its neighbours' complete them. Chosen on LoCoMo
# (session recall@5 in process: 0.859 at 0.5, 0.858 at 1, 0.850 at 0.3).
NEIGHBOUR_WEIGHT = 0.5


def bm25(terms: Sequence[str], docs: Iterable[tuple[str, Mapping[str, float], float]], total_docs: int,
         avg_len: float) -> list[tuple[str, float]]:  # fmt: skip
    """(doc id, score), best first (ties by id). ``docs``: (id, frequencies of the query's terms, length).
    ``total_docs``/``avg_len``: of the whole memory."""
    rows = list(docs)
    df = {t: sum(1 for _, tf, _ in rows if t in tf) for t in terms}
    n = max(total_docs, len(rows), 1)
    avg = avg_len if avg_len > 0 else 1.0
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
    scored = []
    for doc_id, tf, length in rows:
        s = 0.0
        for t in terms:
            f = tf.get(t, 0)
            if f:
                s += idf[t] * f * (K1 + 1) / (f + K1 * (1 - B + B * length / avg))
        scored.append((doc_id, s))
    return sorted(scored, key=lambda x: (-x[1], x[0]))


def rare_terms(terms: Sequence[str], common: Collection[str]) -> list[str]:
    """The query's terms that select a large memory's full-text candidates: those not ``common`` (held by a large
    share of the units, which BM25 weighs at next to nothing and which would make the candidates every recent
    unit). Empty when no term is left: full text has nothing to rank by."""
    return [t for t in terms if t not in common]


@dataclass(frozen=True)
class Candidate:
    """A unit holding at least one of the query's terms: its place in its episode, the frequencies of the query's
    terms in it and its length in lexemes."""

    unit_id: str
    episode_id: str
    ordinal: int
    tf: Mapping[str, int]
    length: int


def windows(candidates: Sequence[Candidate], avg_len: float) -> list[tuple[str, dict[str, float], float]]:
    """Each candidate as a BM25 document (``bm25``'s ``docs``) read with its neighbours, the units just before and
    after it in its episode: their term frequencies summed (a neighbour's weighed ``NEIGHBOUR_WEIGHT``), their
    lengths summed. A neighbour that is no candidate holds none of the query's terms: it adds no term, and
    ``avg_len`` (the memory's average unit length) unless it cannot exist (before a first unit; whether a unit is
    its episode's last is not known here, so a next neighbour always counts)."""
    at = {(c.episode_id, c.ordinal): c for c in candidates}
    out = []
    for c in candidates:
        tf, length = {t: float(f) for t, f in c.tf.items()}, float(c.length)
        for ordinal in (c.ordinal - 1, c.ordinal + 1):
            if ordinal < 0:
                continue
            n = at.get((c.episode_id, ordinal))
            if n is None:
                length += avg_len
                continue
            length += n.length
            for t, f in n.tf.items():
                tf[t] = tf.get(t, 0.0) + NEIGHBOUR_WEIGHT * f
        out.append((c.unit_id, tf, length))
    return out
