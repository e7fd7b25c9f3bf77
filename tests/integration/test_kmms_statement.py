"""A question searched with its statement form (governance.kmms.statement), end to end: HTTP -> gate -> kmms
processors -> read model -> search.

"Where do I work?" is closer to "Thanks, wish me luck." (cosine 0.14) than to "my manager at Bluefin Analytics
asked me to lead a new project" (0.12): nothing in the evidence says "work", and the model scores a question
against statements poorly. Its statement form "i work" scores the evidence 0.20 and the small talk 0.11, so the
search, which ranks by the two blended, puts the evidence first among the small talk around it
(``HIVEMEM_KMMS_STATEMENT=0`` turns the blend off: then "Thanks, wish me luck." comes first and the first test
fails). What the search reports stays the question's own: the hits' similarities are read
against its own vector, not the blend's."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import pytest

from governance.kmms.statement import blend
from hivemem.stack import Stack
from producers.memory_client import MemoryClient
from tests.integration.kmms_support import SEED_RULES, app_pool, conversed, search_in_process, unit_vectors

pytestmark = pytest.mark.integration

CLAW = f"statement-{uuid.uuid4().hex[:6]}"
HISTORY = [  # (date, what the user said, the assistant's reply): small talk around the one thing told about work
    ("2026-03-02", "I'm so tired today.", "That sounds draining. Anything fun planned to recharge?"),
    ("2026-03-05", "Which neighbourhood is nice to stay in?", "Stay near the old town for atmosphere."),
    ("2026-03-09", "By the way, my manager at Bluefin Analytics asked me to lead a new project.",
     "Congratulations, that's a vote of confidence."),
    ("2026-03-12", "Thanks, wish me luck.", "Good luck! Take photos before you take things apart."),
    ("2026-03-16", "Do you have a favourite season?", "I don't experience seasons, but many people love autumn."),
    ("2026-03-20", "Great, I'll give it a try.", "Good luck, and listen to your body!"),
]  # fmt: skip
EVIDENCE = "s-2"
QUESTION = "Where do I work?"


@pytest.fixture(scope="module")
def worker(stack: Stack) -> MemoryClient:
    return conversed(stack, CLAW, "noor", HISTORY)


def test_the_statement_form_ranks_what_the_user_told_first(stack: Stack, worker: MemoryClient) -> None:
    # The statement form is an opt-in setting (HIVEMEM_KMMS_STATEMENT, docs/kmms.md): searched in process with it.
    res = search_in_process(stack, CLAW, "noor", QUESTION, 6, "2026-04-01T00:00:00Z", statement=0.5, rules=SEED_RULES)
    sessions = [h.session_id for h in res.hits if h.layer == 4]
    assert sessions[0] == EVIDENCE, [(h.session_id, h.similarity, h.text[:50]) for h in res.hits if h.layer == 4]


def _ms(day: str) -> int:
    return int(datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp() * 1000)


def test_reported_similarities_are_the_questions_own(stack: Stack, worker: MemoryClient) -> None:
    """One search ranks by a blend of two stored vectors and reports against the first (``own_vector``), the
    other ranks by the first alone: each hit both return has one similarity."""
    from projections.kmms import queries as q
    from projections.kmms.search import Memory
    from projections.queries import tenant_tx

    async def run() -> tuple[q.SearchResult, q.SearchResult]:
        async with app_pool(stack, max_size=2) as pool:
            async with tenant_tx(pool, "mem-b") as conn:
                model, (own, other) = await unit_vectors(conn, CLAW, 2)
            m, at = Memory("mem-b", CLAW, "noor"), _ms("2026-04-01")
            blended = await q.search(pool, m, q.SearchParams(QUESTION, blend(own, other, 0.5), model, 4, at,
                                                             own_vector=own))  # fmt: skip
            plain = await q.search(pool, m, q.SearchParams(QUESTION, own, model, 4, at))
            return blended, plain

    blended, plain = asyncio.run(run())
    by_plain = {h.node_id: h.similarity for h in plain.hits if h.layer == 4}
    both = [h for h in blended.hits if h.layer == 4 and h.node_id in by_plain]
    assert both, "the two searches share no episode"
    assert [h.similarity for h in both] == [by_plain[h.node_id] for h in both]
