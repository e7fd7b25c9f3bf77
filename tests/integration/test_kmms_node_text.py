"""The derived nodes' full-text ranking (projections/kmms/nodes.py) on the real read model: BM25 over the memory's
nodes, as the units are ranked. A node holding the question's rare word comes before nodes that repeat a word most
of the memory's nodes hold; Postgres's ``ts_rank_cd``, which ranked them before, has no inverse document
frequency and put the repeated common word first."""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from governance.kmms.bm25 import bm25
from governance.kmms.search_config import DEFAULT
from hivemem.stack import Stack
from projections.kmms import search
from projections.kmms.nodes import node_candidates
from projections.kmms.search import Memory
from projections.kmms.sql import QUERY_TERMS, bm25_ranking, query_terms_of

pytestmark = pytest.mark.integration

NODES = {  # node id -> content (L3 summaries of one memory)
    "n-work-1": "Work, work, work: the user talked about work deadlines and work meetings at work.",
    "n-work-2": "The user's work week: work travel and a work dinner.",
    "n-work-3": "Work again: the user asked about work email etiquette.",
    "n-dog": "The user adopted a greyhound called Biscuit.",
}
QUESTION = "what about work and my greyhound?"
_ENTRY = re.compile(r"'((?:[^']|'')+)'(?::([\d,A-D]+))?")


def _text_rankings(stack: Stack, tenant: str, claws: tuple[str, ...] = ("claw-1", "claw-2")) -> list[list[str]]:
    """The text ranking of each of ``claws``' nodes (claw-1 holds ``NODES``, no other claw any), in one transaction
    that is rolled back: the rows never reach the read model the other tests (and their replay comparisons) read,
    and are never on the log."""

    async def ranking(conn: Any, claw: str) -> list[str]:
        nodes = await node_candidates(conn, Memory(tenant, claw, "u", None), None, "test", QUESTION, "text",
                                      "n.event_time <= %(as_of)s", {"as_of": 10_000}, 10, cfg=DEFAULT)  # fmt: skip
        return [n.node_id for n in nodes]

    async def run() -> list[list[str]]:
        conn = await psycopg.AsyncConnection.connect(stack.settings.require_database())
        async with conn, conn.transaction(force_rollback=True):
            for i, (node_id, content) in enumerate(NODES.items()):
                await conn.execute(
                    "INSERT INTO kmms.kmms_nodes (tenant, claw_id, scope, node_id, layer, entity, topic, content, "
                    "version, valid_from, event_time, confidence, source_ids, model, logged_at) "
                    "VALUES (%s, 'claw-1', 'u', %s, 3, 'user', 'life', %s, 1, 0, %s, 0.8, %s, 'test', %s)",
                    (tenant, node_id, content, 1_000 + i, [f"ep-{i}"], 1_000 + i),
                )
            return [await ranking(conn, claw) for claw in claws]

    return asyncio.run(run())


def test_a_nodes_rare_word_outranks_a_common_word_said_often(stack: Stack) -> None:
    ranking, other_claws = _text_rankings(stack, f"nodes-{uuid.uuid4().hex[:6]}")
    assert ranking[0] == "n-dog", ranking
    assert sorted(ranking) == sorted(NODES)  # every node holding a word of the question is a candidate
    assert other_claws == []  # another memory's nodes are not this one's candidates


def test_a_large_memorys_kept_statistics_rank_its_nodes_as_read_in_the_statement(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small memory's node statistics are read in the statement that ranks the nodes; a large one's are kept
    (``kept_stats``) and passed as parameters. Both rank alike: every memory counts as large here, so the first
    ranking reads them and keeps them, and the second ranks by the kept ones."""
    monkeypatch.setattr(search, "EXACT_STATS_BELOW", 1)
    tenant = f"nodes-{uuid.uuid4().hex[:6]}"
    read, kept = _text_rankings(stack, tenant, ("claw-1", "claw-1"))
    assert read[0] == "n-dog" and sorted(read) == sorted(NODES)
    assert kept == read
    stats = search.kept_stats({"t": tenant, "c": "claw-1", "s": "u"}, "nodes")
    assert stats is not None and stats[0] == len(NODES) and stats[1] > 1  # count and average length, as read


def _counts(tsvector_text: str) -> dict[str, int]:
    """Every lexeme of a tsvector's text form with its number of positions (1 for none)."""
    return {m[1].replace("''", "'"): (m[2].count(",") + 1 if m[2] else 1) for m in _ENTRY.finditer(tsvector_text)}


def test_a_candidates_query_terms_count_as_in_its_whole_tsvector(stack: Stack) -> None:
    """What BM25 reads of a candidate (``query_terms_of``: its tsvector cut to the query's lexemes) counts each
    query term as the whole tsvector does, whatever weights the tsvector had, and holds no other lexeme."""
    question = f"{QUESTION} O'Brien's boards"
    texts = [*NODES.values(), "O'Brien's skateboard: boards, boarding and a board.", "nothing of it here"]
    with psycopg.connect(stack.settings.require_database(), autocommit=True) as conn:
        row = conn.execute(f"SELECT {QUERY_TERMS}", {"text": question}).fetchone()
        assert row is not None and len(row[0]) >= 4
        terms = set(row[0])
        for content in texts:
            for weighted in (False, True):  # a node's tsvector may carry weights; the cut must not lose them
                doc = "setweight(to_tsvector('english', %(content)s), 'B')" if weighted else \
                    "to_tsvector('english', %(content)s)"  # fmt: skip
                got = conn.execute(f"SELECT d.tsv::text, {query_terms_of('d.tsv')}::text FROM (SELECT {doc} AS tsv) d",
                                   {"content": content, "text": question}).fetchone()  # fmt: skip
                assert got is not None
                whole, cut = _counts(str(got[0])), _counts(str(got[1]))
                assert cut == {t: n for t, n in whole.items() if t in terms}, (content, whole, cut)
    assert whole and not cut  # the last text holds none of the query's words


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(st.dictionaries(st.sampled_from(["kayak", "did", "go", "lisbon", "x"]),
                                     st.lists(st.integers(1, 200), min_size=1, max_size=4, unique=True),
                                     min_size=1, max_size=4),
                     min_size=1, max_size=12),
       extra=st.lists(st.integers(0, 30), min_size=12, max_size=12), total=st.integers(0, 40),
       avg=st.one_of(st.just(0.0), st.floats(0.01, 20.0)))  # fmt: skip
def test_postgres_ranks_by_the_bm25_formula(stack: Stack, docs: list[dict[str, list[int]]], extra: list[int],
                                            total: int, avg: float) -> None:  # fmt: skip
    """``bm25_ranking`` (the search's full-text ranking, in SQL) orders candidates as ``governance.kmms.bm25`` does:
    the same scores position by position (the sum's order may differ in the last bit, so exact ties may swap)."""
    terms = ["kayak", "did", "go", "lisbon"]  # "x" is in some candidates but not the query
    rows, py_docs = [], []
    for i, positions in enumerate(docs):
        tsv = " ".join(f"'{lex}':" + ",".join(map(str, sorted(p))) for lex, p in sorted(positions.items()))
        length = len(positions) + extra[i]
        rows.append((f"d{i:02d}", length, tsv))
        py_docs.append((f"d{i:02d}", {lex: len(p) for lex, p in positions.items() if lex in terms}, length))
    expected = bm25(terms, py_docs, total, avg)
    score = dict(expected)
    candidates = "SELECT v.id, v.lexemes, v.terms::tsvector AS terms FROM unnest(%(ids)s::text[], %(lens)s::int[], " \
        "%(tsvs)s::text[]) AS v(id, lexemes, terms)"  # fmt: skip
    with psycopg.connect(stack.settings.require_database(), autocommit=True) as conn:
        got = conn.execute(bm25_ranking(candidates, "%(terms)s::text[]"), {
            "ids": [r[0] for r in rows], "lens": [r[1] for r in rows], "tsvs": [r[2] for r in rows], "terms": terms,
            "n": len(rows), "bm25_total": total, "bm25_avg": avg if avg > 0 else 1.0}).fetchall()  # fmt: skip
    ranked = [str(r[0]) for r in got]
    assert sorted(ranked) == sorted(score)
    assert [score[d] for d in ranked] == pytest.approx([s for _, s in expected], rel=1e-12, abs=1e-12)
