"""Pseudo-relevance feedback (governance.kmms.feedback), end to end: HTTP -> gate -> kmms processors -> read model
-> search.

Three concerts told three ways among small talk: "we went to the Arcade Fire concert", "a tribute band played a
great set at the festival", "I saw Vampire Weekend live on Friday, what a show". The last shares no word with
"How many concerts have I gone to lately?" and scores under the small talk that sounds like a question. The
first stage ranks the first concert high, and the candidates are then ranked again by the question moved
toward its best ones, which is close to the other two. The second test searches the same memory with the
feedback off (the default since it did not gain on public data: docs/kmms.md) and on
(``HIVEMEM_KMMS_FEEDBACK=0.5``), in process, with the same question vector: the told concerts gain places, none loses
one, and the first hit keeps its place; the API ranks as the default does."""

from __future__ import annotations

import uuid

import pytest

from hivemem.stack import Stack
from producers.memory_client import MemoryClient
from tests.integration.kmms_support import SEED_RULES, conversed, search_in_process

pytestmark = pytest.mark.integration

CLAW = f"feedback-{uuid.uuid4().hex[:6]}"
HISTORY = [  # (date, what the user said, the assistant's reply)
    ("2026-05-02", "By the way, we went to the Arcade Fire concert last night.", "Lucky you, how was it?"),
    ("2026-05-05", "Side note: the Ljubljana fun run was this morning and I beat my time.", "Well done!"),
    ("2026-05-09", "A Fleetwood Mac tribute band played a great set at the festival at the weekend.",
     "Sounds like a fun weekend."),
    ("2026-05-12", "Oh, unrelated, but my main sport is tennis, I go three times a week.", "Great for fitness."),
    ("2026-05-16", "How many days is enough for Lisbon, honestly?", "Three full days covers the highlights."),
    ("2026-05-20", "I just watched The Lives of Others. What did people think of the ending?",
     "Most found it moving."),
    ("2026-05-23", "I ran the Tallinn 10K on Sunday.", "Congratulations!"),
    ("2026-05-27", "By the way, my parents still live in Kuching, the town I grew up in.", "A lovely place."),
    ("2026-05-30", "Hmm, perfect, I'll try that. Funny timing, I saw Vampire Weekend live on Friday, what a show.",
     "Great band!"),
    ("2026-06-02", "I'm so tired today.", "That sounds draining. Anything fun planned to recharge?"),
]  # fmt: skip
CONCERTS = {"s-0", "s-2", "s-8"}
QUESTION = "How many concerts have I gone to lately?"
AS_OF = "2026-06-10"


@pytest.fixture(scope="module")
def fan(stack: Stack) -> MemoryClient:
    return conversed(stack, CLAW, "ines", HISTORY)


@pytest.fixture(scope="module")
def off_and_on(stack: Stack, fan: MemoryClient) -> tuple[list[str], list[str]]:
    """The memory's sessions as the search ranks them, in process, among the rules the feedback was written with
    (``SEED_RULES``, the statement form), with the feedback off and on."""

    def ranks(rules: list[str]) -> list[str]:
        res = search_in_process(stack, CLAW, "ines", QUESTION, len(HISTORY), f"{AS_OF}T00:00:00Z", rules=rules,
                                statement=0.5)  # fmt: skip
        return [h.session_id or "" for h in res.hits]

    return ranks([r for r in SEED_RULES if r != "feedback"]), ranks(list(SEED_RULES))


def test_the_api_ranks_as_the_defaults_do(stack: Stack, fan: MemoryClient) -> None:
    res = fan.search(QUESTION, k=len(HISTORY), as_of=f"{AS_OF}T00:00:00Z")
    plain = search_in_process(stack, CLAW, "ines", QUESTION, len(HISTORY), f"{AS_OF}T00:00:00Z")
    assert [h.session_id for h in res.hits] == [h.session_id for h in plain.hits]


def test_the_scenario_tells_feedback_apart(off_and_on: tuple[list[str], list[str]]) -> None:
    off, on = off_and_on
    assert on != off, "the feedback changed nothing: the scenario no longer tells the two apart"


def test_feedback_lifts_the_concerts_and_keeps_the_first(off_and_on: tuple[list[str], list[str]]) -> None:
    off, on = off_and_on
    place = {"off": {s: off.index(s) for s in CONCERTS}, "on": {s: on.index(s) for s in CONCERTS}}
    assert all(place["on"][s] <= place["off"][s] for s in CONCERTS), (off, on)
    assert sum(place["on"].values()) < sum(place["off"].values()), (off, on)
    assert on[0] == off[0]
