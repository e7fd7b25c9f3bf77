"""Pseudo-relevance feedback (governance.kmms.feedback), end to end: HTTP -> gate -> kmms processors -> read model
-> search.

Three concerts told three ways among small talk: "we went to the Arcade Fire concert", "a tribute band played a
great set at the festival", "I saw Vampire Weekend live on Friday, what a show". The last shares no word with
"How many concerts have I gone to lately?" and scores under the small talk that sounds like a question. The
first stage ranks the first concert high, and the candidates are then ranked again by the question moved
toward its best ones, which is close to the other two. The second test searches the same memory with the
feedback off (``HIVEMEM_KMMS_FEEDBACK=0``) and on, in process, with the same question vector: the told concerts
gain places, none loses one, and the first hit keeps its place; the API ranks as the feedback does."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import pytest

from hivemem.stack import Stack
from producers.memory_client import MemoryClient
from tests.integration.kmms_support import app_pool, conversed

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
    """The memory's sessions as the search ranks them, in process, with the feedback off and on (one question
    vector, embedded here as the API embeds it)."""
    from governance.kmms.statement import question_vectors
    from hivemem.caml_wiring import embedder
    from projections import kmms_queries as q
    from projections import kmms_search
    from projections.kmms_search import Memory

    emb = embedder()
    at = int(datetime.fromisoformat(AS_OF).replace(tzinfo=UTC).timestamp() * 1000)
    own, blended = question_vectors(emb.embed_query, q.content_query(QUESTION, at), 0.5)

    async def ranks(beta: float) -> list[str]:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(kmms_search, "FEEDBACK_BETA", beta)
            async with app_pool(stack, max_size=2) as pool:
                res = await q.search(pool, Memory("mem-b", CLAW, "ines"),
                                     q.SearchParams(QUESTION, blended or own, emb.model_id, len(HISTORY), at,
                                                    own_vector=own if blended else None))  # fmt: skip
        return [h.session_id or "" for h in res.hits if h.layer == 4]

    return asyncio.run(ranks(0.0)), asyncio.run(ranks(kmms_search.FEEDBACK_BETA))


def test_the_api_ranks_with_feedback(fan: MemoryClient, off_and_on: tuple[list[str], list[str]]) -> None:
    off, on = off_and_on
    assert on != off, "the feedback changed nothing: the scenario no longer tells the two apart"
    res = fan.search(QUESTION, k=len(HISTORY), as_of=f"{AS_OF}T00:00:00Z")
    assert [h.session_id for h in res.hits if h.layer == 4] == on, (off, on)


def test_feedback_lifts_the_concerts_and_keeps_the_first(off_and_on: tuple[list[str], list[str]]) -> None:
    off, on = off_and_on
    place = {"off": {s: off.index(s) for s in CONCERTS}, "on": {s: on.index(s) for s in CONCERTS}}
    assert all(place["on"][s] <= place["off"][s] for s in CONCERTS), (off, on)
    assert sum(place["on"].values()) < sum(place["off"].values()), (off, on)
    assert on[0] == off[0]
