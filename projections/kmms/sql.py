"""The SQL the KMMS read model's queries share: a unit's family of vectors and a unit's similarity to the question;
and full text's: the query's lexemes, a tsvector cut to them, candidates ranked by BM25
(``governance.kmms.bm25``'s formula, in SQL), the lexemes of a ``tsquery``'s text and the ``tsquery`` of a term
list."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from psycopg import AsyncConnection

from governance.kmms.bm25 import K1, NEIGHBOUR_WEIGHT, B
from governance.kmms.units import MAX_SENTENCES, SENTENCE

Conn = AsyncConnection[tuple[object, ...]]
_LEXEME = re.compile(r"'((?:[^']|'')+)'(?::([\d,A-D]+))?")
# A unit's vector ids: its own and its sentences' (``<unit>~s<n>``). Written out, not built by a subquery over
# generate_series: the subquery ran once per unit, a fifth of a time window's exact ranking (62 -> 49 ms).
FAMILY = "ARRAY[u.unit_id, " + ", ".join(f"u.unit_id || '{SENTENCE}{i}'" for i in range(MAX_SENTENCES + 1)) + "]"
# The unit of a vector ``{v}`` of kind unit or sentence (``governance.kmms.units.unit_of``). Only a sentence's id is
# cut: regexp_replace costs ~13 us a row, most of an exact scan.
UNIT_OF_SQL = "CASE WHEN {v}.kind = 'sentence' THEN regexp_replace({v}.unit_id, '~s[0-9]+$', '') ELSE {v}.unit_id END"
# A unit's similarity to the query (SQL over ``u.``; parameters q and model): its best vector's, its own or one of its
# sentences'.
UNIT_SIMILARITY = ("(SELECT max(1 - (v.embedding <=> %(q)s::vector)) FROM kmms.kmms_vectors v "
                   f"WHERE v.unit_id = ANY({FAMILY}) AND v.model = %(model)s AND v.tenant = u.tenant)")  # fmt: skip


def vector_literal(v: list[float]) -> str:
    """A vector as pgvector's text form, for ``%(q)s::vector`` (a search writes its question's several times)."""
    return _literal(tuple(v))


@lru_cache(maxsize=16)
def _literal(v: tuple[float, ...]) -> str:
    return "[" + ",".join(repr(float(x)) for x in v) + "]"


# The lexemes of the query's text (``%(text)s``) as an array: ``to_tsvector``'s, which are ``plainto_tsquery``'s.
QUERY_TERMS = "tsvector_to_array(to_tsvector('english', %(text)s))"


def query_terms_of(tsv: str) -> str:
    """SQL: the tsvector ``tsv`` with only the query's lexemes (``QUERY_TERMS``), positions kept: what BM25 reads of
    a candidate (``bm25_ranking``)."""
    return f"ts_filter(setweight(setweight({tsv}, 'D'), 'A', {QUERY_TERMS}), '{{a}}')"


def bm25_ranking(candidates: str, terms: str, total: str = "%(bm25_total)s::float8",
                 avg: str = "%(bm25_avg)s::float8", scores: bool = False) -> str:  # fmt: skip
    """SQL: the ``%(n)s`` best of ``candidates`` by Okapi BM25, best first, ties by id (codepoint order); with
    ``scores``, each with its score (0 for a candidate holding none of ``terms``).

    ``candidates``: a statement of rows (id, lexemes: the candidate's length, terms: its tsvector holding at least
    the query's lexemes, e.g. ``query_terms_of``, its positions of weight A; a window's neighbours' of weight B,
    which count ``NEIGHBOUR_WEIGHT`` each); ``terms``: SQL of the query's lexemes (a text[]). ``total`` and
    ``avg``: SQL of the corpus' number of documents and their average length (the memory's units or nodes; by
    default the parameters ``bm25_total`` and ``bm25_avg``; an average of 0 or less counts as 1). The formula is
    ``governance.kmms.bm25.bm25``'s, idf from the candidates' document frequencies, K1 and B its constants;
    ``tests/integration/test_kmms_node_text.py`` holds the two to the same ranking. Postgres scores the candidates
    where they are: read into Python, each candidate's row and terms cost about 8 us of the API's one busy thread
    (3-4 ms of a LoCoMo search)."""
    k1, b = f"{K1!r}::float8", f"{B!r}::float8"
    avg_len = f"(CASE WHEN {avg} > 0 THEN {avg} ELSE 1 END)"  # as bm25(): an empty corpus averages 1
    score = ", coalesce(sc.s, 0)" if scores else ""
    return (
        f"WITH c AS MATERIALIZED ({candidates}), "
        # A term's frequency: its positions, those of weight B (a window's neighbours', kmms.unit_window_terms)
        # counting NEIGHBOUR_WEIGHT each.
        "t AS (SELECT c.id, c.lexemes, x.lexeme, coalesce(array_length(x.positions, 1), 1)::float8 "
        f"- {1 - NEIGHBOUR_WEIGHT!r}::float8 * coalesce(cardinality(array_positions(x.weights, 'B')), 0) AS f "
        f"FROM c, unnest(c.terms) x WHERE x.lexeme = ANY({terms})), "
        "df AS (SELECT t.lexeme, count(*)::float8 AS df FROM t GROUP BY t.lexeme), "
        f"n AS (SELECT greatest({total}, count(*), 1) AS n FROM c) "
        f"SELECT c.id{score} FROM c LEFT JOIN (SELECT t.id, sum(ln(1 + (n.n - df.df + 0.5) / (df.df + 0.5)) * t.f "
        f"* ({k1} + 1) / (t.f + {k1} * (1 - {b} + {b} * t.lexemes / {avg_len}))) AS s "
        "FROM t JOIN df USING (lexeme) CROSS JOIN n GROUP BY t.id) sc USING (id) "
        'ORDER BY coalesce(sc.s, 0) DESC, c.id COLLATE "C" LIMIT %(n)s'
    )


def query_lexemes(tsquery_text: str) -> list[str]:
    """``'buy' | 'weekend'`` -> ["buy", "weekend"] (first occurrence order, no repeats)."""
    return list(dict.fromkeys(m[1].replace("''", "'") for m in _LEXEME.finditer(tsquery_text)))


def or_query(terms: Sequence[str]) -> str | None:
    """The tsquery text (an OR) of ``terms``, which selects the units holding any of them; None for no terms."""
    return " | ".join(quoted(t) for t in terms) if terms else None


def quoted(lexeme: str) -> str:
    """A lexeme as ``query_lexemes`` reads it (a backslash still escaped, as Postgres prints it) back into a
    tsquery operand: quoted, quotes doubled."""
    return "'" + lexeme.replace("'", "''") + "'"
