"""A state asked about in a month, end to end (HTTP -> gate -> kmms processors -> read model -> search): "What
sport was I doing in June?" reads as a time window (an event verb, "was I doing"), whose rounds come first. With
the window's margin on (``HIVEMEM_KMMS_WINDOW_MARGIN`` 0.15, as written; off by default since 2026-11-28, docs/kmms.md
"How the ranking was chosen"), the April round that set the state is clearly closer to the question than June's
small talk, so it comes before them (projections.kmms.rerank.window_first)."""

from __future__ import annotations

import uuid

import pytest

from hivemem.stack import Stack
from producers.memory_client import MemoryClient
from tests.integration.kmms_support import conversed, search_in_process

pytestmark = pytest.mark.integration

HISTORY = [  # (date, what the user said, the assistant's reply)
    # The state is the round's whole point: a fact said in passing inside a round about something else is found
    # by its sentence's own vector only with HIVEMEM_KMMS_ROUND_SENTENCES=1 (off by default, docs/kmms.md).
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


def test_the_round_that_set_the_state_comes_before_the_months_small_talk_with_the_margin(
    stack: Stack, rower: MemoryClient
) -> None:
    # The default (through the API): the window's rounds first, whatever their similarity; April's after them.
    res = rower.search("What sport was I doing in June?", k=5, as_of="2026-08-18T00:00:00Z")
    assert res.temporal_intent == "WINDOW"
    sessions = [h.session_id for h in res.hits if h.layer == 4]
    assert set(sessions[:4]) == {"s-1", "s-2", "s-3", "s-4"} and sessions[4] == "s-0", sessions
    # The rule on (in process, on the same read model): April's round, clearly closer, before June's.
    ruled = search_in_process(stack, CLAW, "ines", "What sport was I doing in June?", 5,
                              "2026-08-18T00:00:00Z", rules=("window_margin",))  # fmt: skip
    sessions = [h.session_id for h in ruled.hits if h.layer == 4]
    assert sessions[0] == "s-0", sessions
    assert set(sessions[1:]) <= {"s-1", "s-2", "s-3", "s-4"}


def test_a_window_with_a_round_as_close_keeps_its_own_first(rower: MemoryClient) -> None:
    # June's training question is about as close to a question about training as April's rowing: no round
    # outside the window beats June's best by the margin, so June's rounds keep the first places.
    res = rower.search("How did I train in June?", k=5, as_of="2026-08-18T00:00:00Z")
    assert res.temporal_intent == "WINDOW"
    sessions = [h.session_id for h in res.hits if h.layer == 4]
    assert sessions[0] != "s-0", sessions
