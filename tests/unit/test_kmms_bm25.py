"""BM25's formula (governance.kmms.bm25: idf, length normalisation) and a tsquery text's lexemes (projections.kmms.sql).
The search runs the formula in SQL: tests/integration/test_kmms_node_text.py holds the two to the same ranking."""

from __future__ import annotations

import math

from governance.kmms.bm25 import K1, NEIGHBOUR_WEIGHT, B, Candidate, bm25, rare_terms, windows
from projections.kmms.sql import or_query, query_lexemes, quoted


def test_query_lexemes_of_a_tsquery_text() -> None:
    assert query_lexemes("'buy' | 'weekend' | 'buy'") == ["buy", "weekend"]
    assert query_lexemes("'o''brien' & 'x'") == ["o'brien", "x"]


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


def test_a_unit_is_read_with_its_neighbours_in_its_episode() -> None:
    """A turn answering a question ("A sunset over the lake.") shares no word with it; the turn before ("Did you
    paint lately?") does. Read with its neighbours, each unit holds their terms and their lengths; a neighbour
    holding no query term adds the memory's average length, none before a first unit; a neighbour's terms count
    ``NEIGHBOUR_WEIGHT`` of the unit's own."""
    units = [
        Candidate("e1#0", "e1", 0, {"paint": 1}, 4),
        Candidate("e1#1", "e1", 1, {"melani": 1}, 6),
        Candidate("e2#3", "e2", 3, {"paint": 2}, 5),  # its neighbours hold no query term
    ]
    got = {u: (tf, length) for u, tf, length in windows(units, avg_len=10.0)}
    half = NEIGHBOUR_WEIGHT
    assert got == {
        "e1#0": ({"paint": 1, "melani": half}, 4 + 6 + 0),  # nothing before a first unit
        "e1#1": ({"melani": 1, "paint": half}, 6 + 4 + 10.0),  # the next one is no candidate: the average
        "e2#3": ({"paint": 2}, 5 + 10.0 + 10.0),
    }
    # Scored as documents, the answer's window ranks with the question's words though it holds one of them.
    ranked = [u for u, _ in bm25(["melani", "paint"], windows(units, 10.0), total_docs=20, avg_len=20.0)]
    assert ranked.index("e1#1") < ranked.index("e2#3")
    alone = bm25(["melani", "paint"], [(c.unit_id, c.tf, c.length) for c in units], total_docs=20, avg_len=8.0)
    assert alone[0][0] == "e2#3"  # each unit by its own words: the repeated "paint" first


def test_windows_of_no_candidates_is_empty() -> None:
    assert windows([], avg_len=5.0) == []
