"""A small memory's full-text candidates are found by reading its units, a large one's through the text index
(``projections.kmms.migrations._candidates_by_size``, migration 33): on the real read model, the two candidate
functions return the same rows either way, and each way is the one its memory's size asks for (the transaction's
own index statistics say which index was read)."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from hivemem.stack import Stack
from projections.kmms.migrations import SCAN_BELOW
from projections.kmms.sql import QUERY_TERMS

pytestmark = pytest.mark.integration

QUESTION = "Did Melanie paint the sunset over the lake?"
TURNS = ["Did you paint anything lately, Melanie?", "Yes, a sunset over the lake.", "Lovely! The lake at dusk?",
         "Morning all!", "Time to paint the fence.", "Want a hand with it on Saturday?"]  # fmt: skip
QUERY = "replace(plainto_tsquery('english', %(text)s)::text, ' & ', ' | ')::tsquery"
CALLS = {
    "unit_text_terms": f"kmms.unit_text_terms(%(c)s, 'u', {QUERY}, {QUERY_TERMS}, 0, 100000, NULL, 2000)",
    "unit_window_terms": f"kmms.unit_window_terms(%(c)s, 'u', {QUERY}, {QUERY_TERMS}, 0, 100000, NULL, 2000, 7.5)",
}


def _rows(conn: psycopg.Connection[Any], p: dict[str, Any]) -> tuple[dict[str, list[Any]], int]:
    """Each function's rows (id, length, terms as text), and how many times the transaction read the text indexes."""
    rows = {name: conn.execute(f"SELECT f.unit_id, f.lexemes, f.terms::text FROM {call} f", p).fetchall()
            for name, call in CALLS.items()}  # fmt: skip
    read = conn.execute(
        "SELECT coalesce(sum(pg_stat_get_xact_numscans(c.oid)), 0) FROM pg_class c WHERE "
        "c.relnamespace = 'kmms'::regnamespace AND c.relname = 'kmms_units_tsv'"
    ).fetchone()
    return rows, int(read[0]) if read else 0


def test_a_small_and_a_large_memory_find_the_same_candidates_each_its_own_way(stack: Stack) -> None:
    """A memory of six turns (two conversations) is read unit by unit: the text index is not read, even by a planner
    told to avoid reading tables. With ``SCAN_BELOW`` more units that hold none of the question's words (a third
    conversation), the same memory is large: its candidates can come through the text index, and do, and every
    function returns the same rows as before, the rows a plain statement over the memory selects. (Whether the
    planner reads the index or the table's few pages for a few thousand short test rows is a matter of its costs:
    it read the table once the units' rows lost the owner's words, migration 39. Sequential scans are discouraged
    here so that the test asks what each way can read, not what the planner prefers for a table this small.)"""
    tenant, claw = f"scan-{uuid.uuid4().hex[:6]}", "claw-s"
    p = {"t": tenant, "c": claw, "text": QUESTION}
    with psycopg.connect(stack.settings.require_database()) as conn, conn.transaction(force_rollback=True):
        conn.execute("SELECT set_config('hivemem.tenant', %s, true)", (tenant,))
        conn.execute("SET LOCAL enable_seqscan = off")
        for o, text in enumerate(TURNS):
            e = o // 3
            conn.execute(
                "INSERT INTO kmms.kmms_units (tenant, claw_id, scope, unit_id, episode_id, session_id, thread_id, "
                "ordinal, text, occurred_at, logged_at) VALUES (%s, %s, 'u', %s, %s, %s, '', %s, %s, %s, %s)",
                (tenant, claw, f"ep{e}#{o % 3}", f"ep{e}", f"s{e}", o % 3, text, 1_000 + e, 1_000 + e),
            )
        expected = {
            str(r[0])
            for r in conn.execute(
                f"SELECT u.unit_id FROM kmms.kmms_units u WHERE u.tenant = %(t)s AND u.tsv @@ {QUERY}", p
            ).fetchall()
        }
        small, read_small = _rows(conn, p)
        assert read_small == 0
        assert {str(r[0]) for r in small["unit_window_terms"]} == expected == {"ep0#0", "ep0#1", "ep0#2", "ep1#1"}

        conn.execute(
            "INSERT INTO kmms.kmms_units (tenant, claw_id, scope, unit_id, episode_id, session_id, thread_id, ordinal, "
            "text, occurred_at, logged_at) SELECT %s, %s, 'u', 'ep9#' || i, 'ep9', 's9', '', i, "
            "'Coffee at nine ' || i, 900, 900 FROM generate_series(0, %s) i",
            (tenant, claw, SCAN_BELOW),
        )
        conn.execute("ANALYZE kmms.kmms_units")  # the planner told: four rows of 2,007 hold a word of the question
        large, read_large = _rows(conn, p)
    assert read_large >= len(CALLS)
    assert large == small
