"""Okapi BM25 over Postgres ``tsvector`` text, pure.

Postgres's ``ts_rank_cd`` has no inverse document frequency: with the OR query first-stage search
needs (one missing word must not drop a hit), a unit matching "I" and "did" ranks with one matching
the rare word the question is about. So the candidates (units of the memory holding at least one of
the query's lexemes) are ranked here: idf from their document frequencies among the candidates,
term frequency from each ``tsvector``'s positions, length in lexemes (Postgres's ``length(tsv)``,
the measure the memory's average is taken in).
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence

K1, B = 1.2, 0.75
_LEXEME = re.compile(r"'((?:[^']|'')+)'(?::([\d,A-D]+))?")


def query_lexemes(tsquery_text: str) -> list[str]:
    """``'buy' | 'weekend'`` -> ["buy", "weekend"] (first occurrence order, no repeats)."""
    return list(dict.fromkeys(m[1].replace("''", "'") for m in _LEXEME.finditer(tsquery_text)))


def term_frequencies(tsvector_text: str, terms: Sequence[str]) -> dict[str, int]:
    """How often each of ``terms`` occurs in a ``tsvector``'s text form (``'buy':3 'weekend':5,9``):
    its number of positions, 1 for a lexeme stored without any; terms it lacks are left out.

    Looks up only the query's few terms: parsing every lexeme of 2,000 candidates cost 35 ms a search."""
    found: dict[str, int] = {}
    for term in terms:
        key = "'" + term.replace("'", "''") + "'"
        at = tsvector_text.find(key)
        # An entry starts the text or follows a space, and its quoted lexeme ends at ':' , ' ' or the end;
        # anywhere else the key is part of a longer lexeme ("'board'" in "'skateboard'" has no quote before).
        while at >= 0 and not (
            (at == 0 or tsvector_text[at - 1] == " ")
            and tsvector_text[at + len(key) : at + len(key) + 1] in (":", " ", "")
        ):
            at = tsvector_text.find(key, at + 1)
        if at < 0:
            continue
        rest = at + len(key)
        if tsvector_text[rest : rest + 1] != ":":
            found[term] = 1
            continue
        end = tsvector_text.find(" ", rest)
        found[term] = tsvector_text.count(",", rest, end if end >= 0 else len(tsvector_text)) + 1
    return found


def bm25(terms: Sequence[str], docs: Iterable[tuple[str, Mapping[str, int], int]], total_docs: int,
         avg_len: float) -> list[tuple[str, float]]:  # fmt: skip
    """(doc id, score), best first (ties by id). ``docs``: (id, frequencies of the query's terms, length).
    ``total_docs``/``avg_len``: of the whole memory."""
    rows = list(docs)
    df = {t: sum(1 for _, tf, _ in rows if t in tf) for t in terms}
    n = max(total_docs, len(rows), 1)
    avg = avg_len if avg_len > 0 else 1.0
    scored = []
    for doc_id, tf, length in rows:
        s = 0.0
        for t in terms:
            f = tf.get(t, 0)
            if f:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                s += idf * f * (K1 + 1) / (f + K1 * (1 - B + B * length / avg))
        scored.append((doc_id, s))
    return sorted(scored, key=lambda x: (-x[1], x[0]))


def candidate_query(terms: Sequence[str], common: Collection[str]) -> str | None:
    """The tsquery text (an OR) that selects a large memory's full-text candidates: the query's terms that are
    not ``common`` (held by a large share of the units, which BM25 weighs at next to nothing and which would
    make the candidates every recent unit). None when no term is left: full text has nothing to rank by."""
    rare = [t for t in terms if t not in common]
    return " | ".join(quoted(t) for t in rare) if rare else None


def quoted(lexeme: str) -> str:
    """A lexeme as ``query_lexemes`` reads it (a backslash still escaped, as Postgres prints it) back into a
    tsquery operand: quoted, quotes doubled."""
    return "'" + lexeme.replace("'", "''") + "'"
