"""BM25 over tsvector text: term lookup (projections.kmms.sql), idf, length normalisation (governance.kmms.bm25)."""

from __future__ import annotations

import math
import re

from hypothesis import given
from hypothesis import strategies as st

from governance.kmms.bm25 import K1, B, bm25, rare_terms
from projections.kmms.sql import or_query, query_lexemes, quoted, term_frequencies

_ENTRY = re.compile(r"'((?:[^']|'')+)'(?::([\d,A-D]+))?")


def parse_all(text: str) -> dict[str, int]:
    """Reference: every lexeme of the text form with its number of positions."""
    return {m[1].replace("''", "'"): (m[2].count(",") + 1 if m[2] else 1) for m in _ENTRY.finditer(text)}


def test_lookup_of_postgres_text_forms() -> None:
    text = "'buy':3 'weekend':5,9 'o''brien':1 'skateboard':4 'x'"
    assert term_frequencies(text, ["buy", "weekend", "o'brien", "x", "board", "brien", "missing"]) == {
        "buy": 1, "weekend": 2, "o'brien": 1, "x": 1}  # fmt: skip
    assert query_lexemes("'buy' | 'weekend' | 'buy'") == ["buy", "weekend"]


_LEXEMES = st.text(alphabet="ab',:x", min_size=1, max_size=5)
_POSITIONS = st.one_of(st.none(), st.lists(st.integers(1, 300), min_size=1, max_size=4, unique=True))


@given(st.dictionaries(_LEXEMES, _POSITIONS, max_size=8), st.lists(_LEXEMES, max_size=6))
def test_lookup_agrees_with_a_full_parse(entries: dict[str, list[int] | None], others: list[str]) -> None:
    text = " ".join(
        "'" + lex.replace("'", "''") + "'" + (":" + ",".join(map(str, sorted(pos))) if pos else "")
        for lex, pos in sorted(entries.items())
    )
    terms = list(dict.fromkeys([*entries, *others]))
    full = parse_all(text)
    assert term_frequencies(text, terms) == {t: full[t] for t in terms if t in full}


def test_rare_terms_outweigh_common_ones_and_scores_are_exact() -> None:
    docs = [("a", {"did": 1, "kayak": 1}, 2), ("b", {"did": 1}, 1), ("c", {"did": 2}, 1)]
    ranked = bm25(["did", "kayak"], docs, total_docs=10, avg_len=1.5)
    assert [d for d, _ in ranked] == ["a", "c", "b"]
    idf_kayak = math.log(1 + (10 - 1 + 0.5) / 1.5)
    idf_did = math.log(1 + (10 - 3 + 0.5) / 3.5)
    norm = K1 * (1 - B + B * 2 / 1.5)
    assert math.isclose(ranked[0][1], idf_did * (K1 + 1) / (1 + norm) + idf_kayak * (K1 + 1) / (1 + norm))


def test_a_longer_unit_scores_lower_for_the_same_match() -> None:
    ranked = bm25(["kayak"], [("short", {"kayak": 1}, 3), ("long", {"kayak": 1}, 30)], total_docs=5, avg_len=8)
    assert [d for d, _ in ranked] == ["short", "long"] and ranked[0][1] > ranked[1][1]


def test_candidates_leave_common_lexemes_out() -> None:
    assert rare_terms(["show", "tortois", "favourit"], {"show", "favourit"}) == ["tortois"]
    assert or_query(rare_terms(["show", "tortois", "favourit"], {"show", "favourit"})) == "'tortois'"
    assert or_query(rare_terms(["show", "tortois"], set())) == "'show' | 'tortois'"
    assert or_query(rare_terms(["show", "work"], {"show", "work", "get"})) is None  # nothing left to rank by
    assert or_query(rare_terms([], set())) is None


def test_quoted_lexemes_parse_back() -> None:
    # what query_lexemes reads from Postgres's text form, quoted again, reads back the same
    for text in ["'o''brien'", "'back\\\\slash'", "'café' | 'i/o'", "'1.6'"]:
        lexemes = query_lexemes(text)
        assert query_lexemes(" | ".join(quoted(x) for x in lexemes)) == lexemes
    assert quoted("o'brien") == "'o''brien'"
