"""A change found by the words of the value it changes (governance.kmms.recency ``later_change``,
projections.kmms.rerank ``named_changes``), end to end: HTTP -> gate -> kmms processors -> read model -> search.

"My favourite show at the moment is Severance" is a fact. Months later, in a chat about a trip, the user says
"I stopped watching Severance, Fleabag is my thing these days": no local pattern reads it, so the log keeps
Severance current, and nothing in it is like "What's my favourite show at the moment?", so the first stage
does not rank it. It names the fact's value with a change word: a question about the present finds it by that
value, ranks it before the episode the fact was read from, and puts the fact after it with less confidence."""

from __future__ import annotations

import pytest

from hivemem.stack import Stack
from producers.memory_client import MemoryClient, SearchResult
from tests.integration.kmms_support import fact_hit, facts_of, told_with_fact

pytestmark = pytest.mark.integration

HISTORY = [  # (date, what the user said); session s-<i>. s-0, s-2 and s-4 are of one topic: their summary and facts
    ("2026-01-10", "My favourite show at the moment is Severance, I watch an episode every evening."),
    ("2026-01-20", "I work at Initech as a product designer."),
    ("2026-02-02", "Severance is still my favourite show at the moment, what a cliffhanger."),
    ("2026-02-15", "I baked a lemon tart for my sister's birthday."),
    ("2026-03-01", "I prefer the window seat on trains, I hate the middle one."),
    ("2026-03-20", "Could you sketch a 3-night itinerary for Bergen? I fly there in May."),
    ("2026-04-10", "Is Bergen walkable? Side note: I stopped watching Severance, Fleabag is my thing these days."),
]
CHANGE = "s-6"
QUESTION = "What's my favourite show at the moment?"


@pytest.fixture(scope="module")
def viewer(stack: Stack) -> MemoryClient:
    return told_with_fact(stack, "ada", HISTORY, "Severance")


def _episode(res: SearchResult, session: str) -> int | None:
    return next((i for i, h in enumerate(res.hits) if h.layer == 4 and h.session_id == session), None)


def test_the_log_keeps_the_old_value_current(viewer: MemoryClient) -> None:
    # The premise: the change was not read as a new version (if the patterns learn it, this test must change).
    assert [f.status for f in facts_of(viewer, "Severance")] == ["CURRENT"]


def test_a_change_naming_the_value_comes_before_the_fact_and_its_episode(viewer: MemoryClient) -> None:
    res = viewer.search(QUESTION, k=5, as_of="2026-05-01T00:00:00Z")
    assert res.temporal_intent == "CURRENT"
    change = _episode(res, CHANGE)
    assert change is not None, [(h.layer, h.session_id, h.text[:60]) for h in res.hits]
    told = _episode(res, "s-0")
    assert told is None or change < told, "\n".join(f"{h.layer} {h.session_id} {h.text[:50]}" for h in res.hits)
    _, fact = fact_hit(res, "Severance")
    assert fact.outdated_by == res.hits[change].episode_id
    assert "newer_evidence" in [name for name, _ in fact.modifiers]


def test_asked_before_the_change_the_fact_stands(viewer: MemoryClient) -> None:
    res = viewer.search(QUESTION, k=5, as_of="2026-04-01T00:00:00Z")
    assert _episode(res, CHANGE) is None  # no future leaks
    _, fact = fact_hit(res, "Severance")
    assert "newer_evidence" not in [name for name, _ in fact.modifiers]
