"""Full text reads a unit with its neighbours (``kmms.unit_window_terms``, migration 30; docs/kmms.md, "How the
ranking was chosen"): on the real read model, the SQL's windows are ``governance.kmms.bm25.windows``'s, and through
the API an answer whose words are split over two turns ("Did you paint lately?" / "Melanie: a sunset over the
lake") ranks before a turn that holds one of them alone, which it did not without the neighbours."""

from __future__ import annotations

import re
import uuid
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from governance.kmms.bm25 import NEIGHBOUR_WEIGHT, Candidate, windows
from hivemem.stack import Stack
from projections.kmms.sql import QUERY_TERMS, query_terms_of
from tests.integration.kmms_support import memory, search_in_process

pytestmark = pytest.mark.integration

_ENTRY = re.compile(r"'((?:[^']|'')+)'(?::([\d,A-D]+))?")
WORDS = ["kayak", "lisbon", "paint", "sunset", "the", "fence", "lake"]
QUESTION = "kayak lisbon paint sunset"


def _counts(tsvector_text: str) -> dict[str, float]:
    """Every lexeme of a tsvector's text form with its number of positions (1 for none), a position of weight B (a
    window's neighbour's) counting ``NEIGHBOUR_WEIGHT``."""
    return {m[1].replace("''", "'"): (sum(NEIGHBOUR_WEIGHT if p.endswith("B") else 1.0 for p in m[2].split(","))
                                      if m[2] else 1.0) for m in _ENTRY.finditer(tsvector_text)}  # fmt: skip


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(episodes=st.lists(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6), min_size=1, max_size=6),
                         min_size=1, max_size=4),
       avg=st.floats(0.5, 20.0))  # fmt: skip
def test_postgres_reads_each_candidate_with_its_neighbours_as_windows_does(stack: Stack,
                                                                             episodes: list[list[list[str]]],
                                                                             avg: float) -> None:  # fmt: skip
    """The rows of ``kmms.unit_window_terms`` (in a transaction rolled back: never on the log or the read model
    the other tests compare) are ``windows`` over the units holding a query term: the same ids, lengths and term
    counts. Units of several episodes, turns without any query word between them, first units."""
    tenant, claw = f"win-{uuid.uuid4().hex[:6]}", "claw-w"
    with psycopg.connect(stack.settings.require_database()) as conn, conn.transaction(force_rollback=True):
        conn.execute("SELECT set_config('hivemem.tenant', %s, true)", (tenant,))
        for e, turns in enumerate(episodes):
            for o, words in enumerate(turns):
                conn.execute(
                    "INSERT INTO kmms.kmms_units (tenant, claw_id, scope, unit_id, episode_id, session_id, thread_id, "
                    "ordinal, text, occurred_at, logged_at) VALUES (%s, %s, 'u', %s, %s, %s, '', %s, %s, %s, %s)",
                    (tenant, claw, f"ep{e}#{o}", f"ep{e}", f"s{e}", o, " ".join(words), 1_000 + e, 1_000 + e),
                )
        p = {"t": tenant, "c": claw, "text": QUESTION, "avg": avg}
        alone = conn.execute(
            f"SELECT u.unit_id, u.episode_id, u.ordinal, u.lexemes, {query_terms_of('u.tsv')}::text FROM "
            "kmms.kmms_units u WHERE u.tenant = %(t)s AND u.tsv @@ replace(plainto_tsquery('english', %(text)s)"
            "::text, ' & ', ' | ')::tsquery", p).fetchall()  # fmt: skip
        got = conn.execute(
            "SELECT w.unit_id, w.lexemes, w.terms::text FROM kmms.unit_window_terms(%(c)s, 'u', "
            f"replace(plainto_tsquery('english', %(text)s)::text, ' & ', ' | ')::tsquery, {QUERY_TERMS}, 0, 10000, "
            "NULL, 2000, %(avg)s) w", p).fetchall()  # fmt: skip
    own = [Candidate(str(u), str(e), int(o), {k: int(v) for k, v in _counts(str(t)).items()}, int(n))
           for u, e, o, n, t in alone]  # fmt: skip
    expected = windows(own, avg)
    assert {u: (pytest.approx(n), tf) for u, tf, n in expected} == {
        str(u): (float(n), _counts(str(t))) for u, n, t in got
    }


def _paint(stack: Stack, claw: str) -> Any:
    """A memory of two conversations: in s-0 Caroline asks whether Melanie painted and Melanie answers (the
    question's words split over two turns); in s-1 Melanie says hello and, two turns on, Caroline tells John she
    must paint the fence (each word in a short turn of its own, apart). Searched through the API by full text."""
    mem = memory(stack, "mem-b", claw=claw, user_id="pals")

    def turn(name: str, content: str) -> dict[str, str]:
        return {"role": "user", "name": name, "content": content}

    s0 = [turn("Caroline", "Did you manage to paint anything at all over these last few weeks since the class?"),
          turn("Melanie", "Yes, a sunset over the lake, finished it on Sunday after three tries.")]  # fmt: skip
    s1 = [turn("Melanie", "Morning all!"), turn("John", "Hi there."), turn("Caroline", "Time to paint the fence."),
          turn("John", "Want a hand with it on Saturday?")]  # fmt: skip
    ids = [mem.add(turns, session_id=f"s-{i}", occurred_at=f"2026-05-0{i + 1}T09:00:00Z").episode_id
           for i, turns in enumerate((s0, s1))]  # fmt: skip
    mem.wait_indexed(ids, timeout_s=120)
    return mem


def test_an_answer_split_over_two_turns_ranks_first_with_its_neighbours(stack: Stack) -> None:
    """What a user gets: "What did Melanie paint?" finds s-0, where Caroline's question holds "paint" and Melanie's
    answer holds "Melanie", before s-1's shorter "paint" turn. Without the neighbours (in process, the setting
    off) each turn ranks by its own words and s-1's comes first."""
    claw = f"paint-{uuid.uuid4().hex[:6]}"
    mem = _paint(stack, claw)
    question = "What did Melanie paint?"
    for mode in ("text", "hybrid"):
        res = mem.search(question, k=5, as_of="2026-05-10T00:00:00Z", mode=mode)
        assert [h.session_id for h in res.hits if h.layer == 4][:2] == ["s-0", "s-1"], mode

    alone = search_in_process(stack, claw, "pals", question, 5, "2026-05-10T00:00:00Z", mode="text",
                              changes={"text_neighbours": False})  # fmt: skip
    assert [h.session_id for h in alone.hits if h.layer == 4][:2] == ["s-1", "s-0"]
