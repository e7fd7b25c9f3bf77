"""BM25 over tsvector text: parsing, idf, length normalisation."""

from __future__ import annotations

import math

from governance.kmms.bm25 import K1, B, bm25, parse_tsvector, query_lexemes


def test_parsing_postgres_text_forms() -> None:
    assert parse_tsvector("'buy':3 'weekend':5,9 'o''brien':1 'x'") == {"buy": 1, "weekend": 2, "o'brien": 1, "x": 1}
    assert query_lexemes("'buy' | 'weekend' | 'buy'") == ["buy", "weekend"]


def test_rare_terms_outweigh_common_ones_and_scores_are_exact() -> None:
    docs = [("a", {"did": 1, "kayak": 1}), ("b", {"did": 1}), ("c", {"did": 2})]
    ranked = bm25(["did", "kayak"], docs, total_docs=10, avg_len=1.5)
    assert [d for d, _ in ranked] == ["a", "c", "b"]
    idf_kayak = math.log(1 + (10 - 1 + 0.5) / 1.5)
    idf_did = math.log(1 + (10 - 3 + 0.5) / 3.5)
    norm = K1 * (1 - B + B * 2 / 1.5)
    assert math.isclose(ranked[0][1], idf_did * (K1 + 1) / (1 + norm) + idf_kayak * (K1 + 1) / (1 + norm))
