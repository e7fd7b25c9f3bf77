"""Okapi BM25 over Postgres ``tsvector`` text, pure.

Postgres's ``ts_rank_cd`` has no inverse document frequency: with the OR query first-stage search
needs (one missing word must not drop a hit), a unit matching "I" and "did" ranks with one matching
the rare word the question is about. So the candidates (every unit of the memory holding at least
one of the query's lexemes) are ranked here: idf from their document frequencies within the
memory, term frequency and length from each ``tsvector``'s positions.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

K1, B = 1.2, 0.75
_LEXEME = re.compile(r"'((?:[^']|'')+)'(?::([\d,A-D]+))?")


def parse_tsvector(text: str) -> dict[str, int]:
    """``'buy':3 'weekend':5,9`` -> {"buy": 1, "weekend": 2} (a lexeme without positions counts once)."""
    return {m[1].replace("''", "'"): (m[2].count(",") + 1 if m[2] else 1) for m in _LEXEME.finditer(text)}


def query_lexemes(tsquery_text: str) -> list[str]:
    return list(dict.fromkeys(m[1].replace("''", "'") for m in _LEXEME.finditer(tsquery_text)))


def bm25(terms: Sequence[str], docs: Iterable[tuple[str, dict[str, int]]], total_docs: int,
         avg_len: float) -> list[tuple[str, float]]:  # fmt: skip
    """(doc id, score), best first (ties by id). ``total_docs``/``avg_len``: of the whole memory."""
    rows = list(docs)
    df = {t: sum(1 for _, tf in rows if t in tf) for t in terms}
    n = max(total_docs, len(rows), 1)
    avg = avg_len if avg_len > 0 else 1.0
    scored = []
    for doc_id, tf in rows:
        length = sum(tf.values())
        s = 0.0
        for t in terms:
            f = tf.get(t, 0)
            if f:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                s += idf * f * (K1 + 1) / (f + K1 * (1 - B + B * length / avg))
        scored.append((doc_id, s))
    return sorted(scored, key=lambda x: (-x[1], x[0]))
