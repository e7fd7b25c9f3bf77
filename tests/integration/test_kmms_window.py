"""A state asked about in a month, end to end (HTTP -> gate -> kmms processors -> read model -> search): "What
sport was I doing in June?" reads as a time window (an event verb, "was I doing"). By default the window's ranking
joins all time's as a reciprocal-rank list of weight 2 (``HIVEMEM_KMMS_WINDOW_WEIGHT``, governance.kmms.ranking.
window_fused): a window of four rounds all rank before the best round outside it, and a round outside a misread
window that all time ranks first still ranks among the hits. With the window first (``HIVEMEM_KMMS_WINDOW_WEIGHT=0``,
governance.kmms.ranking.window_first), every round of the window comes before any round outside it."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from hivemem.stack import Stack
from producers.memory_client import MemoryClient
from tests.integration.kmms_support import app_pool, conversed, search_in_process, search_on

pytestmark = pytest.mark.integration

HISTORY = [  # (date, what the user said, the assistant's reply)
    # The state is the round's whole point: a user's round is one vector (its sentences are not embedded apart since
    # 2026-12-05), so a fact said in passing inside a round about something else would be diluted by the rest.
    ("2026-04-02", "My main sport is rowing these days, I go three times a week.", "Great for the whole body."),
    ("2026-06-05", "What should I pack for a trip in August?", "Light layers and a rain jacket."),
    ("2026-06-12", "Is it okay to train on consecutive days?", "Yes, if you alternate hard and easy sessions."),
    ("2026-06-20", "Which neighbourhood is nice to stay in?", "The old town, for atmosphere."),
    ("2026-06-27", "Any day trips worth doing from there?", "A coastal town an hour away."),
]  # fmt: skip


CLAW = f"window-{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="module")
def rower(stack: Stack) -> MemoryClient:
    return conversed(stack, CLAW, "ines", HISTORY)


def test_the_months_rounds_come_before_the_round_that_set_the_state(rower: MemoryClient) -> None:
    # Through the API: the window's four rounds gain at least 2/14 from its list, more than the 1/11 April's round
    # has from all time's at best: April's after them, still among the hits.
    res = rower.search("What sport was I doing in June?", k=5, as_of="2026-08-18T00:00:00Z")
    assert res.temporal_intent == "WINDOW"
    sessions = [h.session_id for h in res.hits if h.layer == 4]
    assert set(sessions[:4]) == {"s-1", "s-2", "s-3", "s-4"} and sessions[4] == "s-0", sessions


def test_a_window_with_a_round_as_close_keeps_its_own_first(rower: MemoryClient) -> None:
    # June's training question is about as close to a question about training as April's rowing: June's rounds
    # keep the first places.
    res = rower.search("How did I train in June?", k=5, as_of="2026-08-18T00:00:00Z")
    assert res.temporal_intent == "WINDOW"
    sessions = [h.session_id for h in res.hits if h.layer == 4]
    assert sessions[0] != "s-0", sessions


def test_a_search_prepares_its_statements_but_never_the_window_count(stack: Stack, rower: MemoryClient) -> None:
    # On a pool of one connection, as the API's (projections.queries.app_pool): after PREPARE_THRESHOLD searches
    # the search's statements are prepared on it, except the window's unit count, whose kept plan would serve every
    # window's width alike (300 ms instead of 20 for "this year" at 100,000 episodes); the window's vectors are
    # prepared, never with a generic plan (projections.kmms.nearest.CUSTOM_PLAN).
    from projections.queries import PREPARE_THRESHOLD

    async def run() -> tuple[list[str], list[str], dict[str, int]]:
        async with app_pool(stack, max_size=1) as pool:
            async with pool.connection() as conn:  # as a server would that kept a generic plan for any statement
                await conn.execute("SET plan_cache_mode = force_generic_plan")
            sessions: list[str] = []
            for _ in range(PREPARE_THRESHOLD + 1):
                res = await search_on(pool, CLAW, "ines", "What sport was I doing in June?", 5, "2026-08-18T00:00:00Z")
                sessions = [h.session_id or "" for h in res.hits if h.layer == 4]
            async with pool.connection() as conn:
                cur = await conn.execute("SELECT statement, generic_plans FROM pg_prepared_statements")
                rows = await cur.fetchall()
                return sessions, [str(r[0]) for r in rows], {str(r[0]): int(str(r[1])) for r in rows}

    sessions, prepared, generic = asyncio.run(run())
    assert set(sessions[:4]) == {"s-1", "s-2", "s-3", "s-4"}, sessions  # the same hits as unprepared, above
    assert any("kmms.unit_window_terms" in s for s in prepared), prepared  # full text's statement
    assert any("<=>" in s and "kmms.kmms_vectors" in s for s in prepared), prepared  # the nearest vectors'
    assert not any(s.startswith("SELECT count(*) FROM kmms.kmms_units") for s in prepared), prepared
    # The window's vectors (read by their time, migration 34), prepared but planned for each window: a generic plan
    # kept for every width (and, for the nearest vectors, every model) chose a scan of the whole memory at scale.
    window = [s for s in prepared if "v.occurred_at >= " in s]
    assert window and all(generic[s] == 0 for s in window), generic


# A date misread: "Spring Fling Market" names a market, not the season, yet reads as spring (March to May). The
# February round that answers half the question is all time's best; spring holds 24 rounds of chores.
CHORES = [(f"2026-{3 + i // 10:02d}-{1 + 2 * (i % 10):02d}", f"Remind me to {chore} this week.", "Noted.")
          for i, chore in enumerate(
              ["water the ferns", "fix the gate", "call the plumber", "book the dentist", "renew the library card",
               "clean the gutters", "pay the electricity bill", "oil the bike chain", "sort the recycling",
               "defrost the freezer", "iron the shirts", "mend the fence", "wash the car", "descale the kettle",
               "replace the smoke alarm battery", "tidy the garage", "sharpen the knives", "vacuum the stairs",
               "air the duvets", "weed the garden", "wipe the windows", "charge the drill", "oil the hinges",
               "dust the shelves"])]  # fmt: skip
MARKETS = [("2026-02-14", "I sold my homemade baked goods at the Farmers' Market today, sourdough and scones.",
            "Congratulations on your first stall!"),
           ("2026-03-07", "The Spring Fling Market was busy, I ran out of scones.", "What a success.")]  # fmt: skip
MARKET_CLAW = f"market-{uuid.uuid4().hex[:6]}"
MARKET_Q = "How many weeks passed between selling baked goods at the Farmers' Market and the Spring Fling Market?"


@pytest.fixture(scope="module")
def baker(stack: Stack) -> MemoryClient:
    return conversed(stack, MARKET_CLAW, "noor", [MARKETS[0], *CHORES, MARKETS[1]])


def test_a_strong_round_outside_a_misread_window_ranks_before_the_windows_weak_rounds(
    stack: Stack, baker: MemoryClient
) -> None:
    # Sessions: s-0 the Farmers' Market (February), s-1 .. s-24 spring's chores, s-25 the Spring Fling Market.
    # Fused (the default), the window's rounds ranked past ~22nd in both lists score less than February's 1/11.
    res = baker.search(MARKET_Q, k=30, as_of="2026-06-01T00:00:00Z")
    assert res.temporal_intent == "WINDOW"
    sessions = [h.session_id for h in res.hits if h.layer == 4]
    assert sessions[0] == "s-25" and "s-0" in sessions[:24], sessions
    # The window first (in process, on the same read model): February's round after every round of spring.
    first = search_in_process(stack, MARKET_CLAW, "noor", MARKET_Q, 30, "2026-06-01T00:00:00Z",
                              changes={"window_weight": 0.0})  # fmt: skip
    sessions = [h.session_id for h in first.hits if h.layer == 4]
    assert sessions.index("s-0") == 25, sessions


# Two rules on by default, each with a memory where it puts the evidence first and, turned off (in process, on the
# same read model), something else comes first.
#
# A state in a past period (POINT_IN_TIME: "was I in", a state verb) ranks its rounds with the period's window as
# a WINDOW question does (HIVEMEM_KMMS_POINT_WINDOW). "The last week of October 2026" is read as October 25-31
# (governance/kmms/temporal.py, a part of a period), not as the last week before the question. Tokyo, told in the
# window, comes first though it says neither "city" nor "was"; without the window the rounds that share the
# question's words come first, as they did before 2026-11-29.
TRIPS = [("2026-09-12", "I was in Lisbon for a city break, what a lovely city to walk in.", "Lisbon is great on foot."),
         ("2026-10-29", "Greetings from Tokyo! The conference starts tomorrow.", "Enjoy it!"),
         ("2026-11-20", "I was back in Berlin, the city feels cold already.", "Wrap up warm.")]  # fmt: skip
# Full text reads the question whole, its date phrase too (HIVEMEM_KMMS_TEXT_DATES): a round that tells of the
# period names it as the question does. "What did I do last weekend?" without its date is "What did I do?", all stop
# words for full text and, for the vectors, closest to the rounds that ask what they did.
WEEKEND = [("2026-03-16", "Last weekend I volunteered at a career fair at the local school.", "How generous of you."),
           ("2026-03-14", "What did I do wrong with my sourdough starter?", "It needs feeding every day."),
           ("2026-03-15", "What did I do with my keys? I can't find them.", "Check your coat pockets."),
           ("2026-03-15", "What did I do to deserve this cold, I feel awful.", "Rest and drink water.")]  # fmt: skip


@pytest.mark.parametrize(("history", "question", "as_of", "intent", "first", "off"), [
    pytest.param(TRIPS, "Which city was I in during the last week of October 2026?", "2026-12-01T00:00:00Z",
                 "POINT_IN_TIME", "s-1", {"point_window": False}, id="a-state-in-a-past-period"),
    pytest.param(WEEKEND, "What did I do last weekend?", "2026-03-18T00:00:00Z", "WINDOW", "s-0",
                 {"text_dates": False}, id="full-text-reads-the-date-phrase"),
])  # fmt: skip
def test_a_rule_on_by_default_puts_the_evidence_first(stack: Stack, history: list[tuple[str, str, str]],
                                                      question: str, as_of: str, intent: str, first: str,
                                                      off: dict[str, bool]) -> None:  # fmt: skip
    claw = f"rule-{uuid.uuid4().hex[:6]}"
    mem = conversed(stack, claw, "aiko", history)
    res = mem.search(question, k=len(history), as_of=as_of)
    assert res.temporal_intent == intent
    sessions = [h.session_id for h in res.hits if h.layer == 4]
    assert sessions[0] == first, sessions
    without = search_in_process(stack, claw, "aiko", question, len(history), as_of, changes=off)
    assert next(h.session_id for h in without.hits if h.layer == 4) != first
