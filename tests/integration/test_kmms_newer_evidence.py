"""A fact that a later episode may have changed (governance.kmms.recency, ``newer_in_topic``), end to end:
HTTP -> gate -> kmms processors -> read model -> search. The local patterns read "my favourite show at the
moment is Dark" as a fact, and do not read "Fleabag is all I watch these days" as its change, so the log keeps "Dark"
current. A question about the present must not put that fact before the later episode: it comes after it,
with the ``newer_evidence`` modifier; asked before the change, the fact stands as it was."""

from __future__ import annotations

import uuid

import pytest

from hivemem.stack import Stack
from producers.memory_client import MemoryClient
from tests.integration.kmms_support import fact_hit, facts_of, told_with_fact

pytestmark = pytest.mark.integration

HISTORY = [  # (date, what the user said)
    ("2026-01-10", "My favourite show at the moment is Dark, I watch an episode every evening."),
    ("2026-01-20", "I work at Initech as a product designer."),
    ("2026-02-02", "I watched the last season of Dark this weekend, still my favourite show at the moment."),
    ("2026-02-15", "I baked a lemon tart for my sister's birthday."),
    ("2026-03-01", "Dark is still my favourite show at the moment, I keep recommending it."),
    ("2026-05-04", "Honestly, Fleabag is all I watch these days, it's my favourite show now."),
]
QUESTION = "What's my favourite show at the moment?"
CLAW = f"viewer-{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="module")
def viewer(stack: Stack) -> MemoryClient:
    return told_with_fact(stack, "zoe", HISTORY, "Dark", claw=CLAW)


def test_the_log_keeps_the_old_value_current(viewer: MemoryClient) -> None:
    # The premise: the change was not read as a new version (if the patterns learn it, this test must change).
    assert [f.status for f in facts_of(viewer, "Dark")] == ["CURRENT"]


def test_a_fact_comes_after_the_later_episode_that_may_have_changed_it(viewer: MemoryClient) -> None:
    res = viewer.search(QUESTION, k=5, as_of="2026-06-01T00:00:00Z")
    assert res.temporal_intent == "CURRENT"
    _, fact = fact_hit(res, "Dark")
    change = next(h for h in res.hits if h.session_id == "s-5")
    assert fact.outdated_by == change.episode_id  # the later evidence is a hit, the fact names it
    assert all(h.layer == 4 for h in res.hits)  # evidence first: the fact is context, never a hit
    assert ("newer_evidence", -0.3) in [(name, round(d, 2)) for name, d in fact.modifiers]
    assert fact.status == "CURRENT" and fact.confidence <= 0.45  # 0.75 base, -0.30, and the others
    assert res.provenance and fact.node_id != res.provenance[-1]  # the drill never answers with it


def test_before_the_change_or_about_the_past_the_fact_stands(viewer: MemoryClient) -> None:
    before = viewer.search(QUESTION, k=5, as_of="2026-04-01T00:00:00Z")
    _, fact = fact_hit(before, "Dark")
    assert "newer_evidence" not in [name for name, _ in fact.modifiers]
    evolution = viewer.search("How has my favourite show changed over time?", k=5, as_of="2026-06-01T00:00:00Z")
    assert evolution.temporal_intent == "EVOLUTION"
    assert all("newer_evidence" not in [n for n, _ in h.modifiers] for h in evolution.context)
