"""A thread is a lane of a memory (docs/kmms.md): a search of one thread shows that thread's evidence and only what
was derived from it, end to end: HTTP -> gate -> kmms processors -> consolidation -> read model -> search. The
consolidator reads a memory's threads together, so a fact told in one thread is a node of the memory; a search of
another thread must neither show it in its ``context`` nor answer with it (before 2026-12-05 it did both: a search
of a thread with no episode at all answered with another thread's fact), nor name its terms among its ``entities``."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from hivemem.stack import Stack
from producers.memory_client import MemoryClient, SearchResult
from projections.auth import mint_token
from tests.conftest import wait_until
from tests.integration.kmms_support import chat, facts_of
from tests.integration.support import owner_db

pytestmark = pytest.mark.integration

CLAW = f"lanes-{uuid.uuid4().hex[:6]}"
USER = "ann"
QUESTION = "What's my favourite show at the moment?"
AS_OF = "2026-06-01T00:00:00Z"


def lane(stack: Stack, thread: str | None) -> MemoryClient:
    token = mint_token(stack.settings.load_config().token_secret, "mem-b", "test", CLAW)
    return MemoryClient(stack.api_url, token, user_id=USER, thread_id=thread, timeout_s=60)


HOME = [  # three sessions of one (entity, topic): consolidation summarises them and reads the fact (docs/kmms.md)
    ("2026-01-10", "My favourite show at the moment is Dark, I watch an episode every evening."),
    ("2026-02-02", "I watched the last season of Dark this weekend, still my favourite show at the moment."),
    ("2026-03-01", "Dark is still my favourite show at the moment, I keep recommending it."),
]
HOME_SESSIONS = {f"s-home-{i}" for i in range(len(HOME))}


@pytest.fixture(scope="module")
def lanes(stack: Stack) -> dict[str | None, MemoryClient]:
    home, work = lane(stack, "home"), lane(stack, "work")
    ids = [home.add(chat(said), session_id=f"s-home-{i}", occurred_at=f"{day}T09:00:00Z").episode_id
           for i, (day, said) in enumerate(HOME)]  # fmt: skip
    ids.append(work.add(chat("I work at Initech as a product designer."), session_id="s-work",
                        occurred_at="2026-01-20T09:00:00Z").episode_id)  # fmt: skip
    every = lane(stack, None)
    wait_until(lambda: bool(facts_of(every, "Dark")), timeout=120, interval=0.5, what="the fact 'Dark'")
    every.wait_indexed(ids, timeout_s=120)
    return {"home": home, "work": work, None: every}


def sessions_of(res: SearchResult) -> set[str]:
    """Every session the result shows: its hits' and those its context's nodes were read from."""
    return {h.session_id for h in res.hits if h.session_id} | {s for h in res.context for s in h.session_ids}


def test_a_thread_shows_its_own_evidence_and_what_was_derived_from_it(lanes: dict[str | None, MemoryClient]) -> None:
    home = lanes["home"].search(QUESTION, k=5, as_of=AS_OF)
    assert [h.thread_id for h in home.hits] == ["home"] * len(HOME)
    assert any(h.layer == 2 and "Dark" in (h.fact_value or "") for h in home.context)
    assert sessions_of(home) == HOME_SESSIONS


def test_another_thread_neither_shows_nor_answers_with_it(lanes: dict[str | None, MemoryClient]) -> None:
    work = lanes["work"].search(QUESTION, k=5, as_of=AS_OF)
    assert [h.thread_id for h in work.hits] == ["work"]
    assert sessions_of(work) == {"s-work"}
    assert not any("Dark" in (h.fact_value or "") or "Dark" in h.text for h in work.context)
    assert "Dark" not in (lanes["work"].ask(QUESTION, k=5, as_of=AS_OF).answer or "")


def test_a_thread_without_episodes_abstains(stack: Stack, lanes: dict[str | None, MemoryClient]) -> None:
    res = lane(stack, "nowhere").search(QUESTION, k=5, as_of=AS_OF)
    assert res.hits == [] and res.context == [] and res.abstained and res.answer_layer is None


def test_a_search_of_every_thread_shows_both(lanes: dict[str | None, MemoryClient]) -> None:
    res = lanes[None].search(QUESTION, k=5, as_of=AS_OF)
    assert {h.thread_id for h in res.hits} == {"home", "work"}
    assert any(h.layer == 2 and "Dark" in (h.fact_value or "") for h in res.context)


def test_a_threads_routing_reads_its_own_episodes_terms(stack: Stack, lanes: dict[str | None, MemoryClient]) -> None:
    # L0 routing (``entities``: the question's words the memory knows as entities or topics) reads, in a search of
    # one thread, that thread's episodes' entities and topics only, not the whole memory's index.
    with owner_db(stack) as conn:
        rows: list[Any] = conn.execute("SELECT thread_id, entities || topics FROM kmms.kmms_episodes "
                                       "WHERE claw_id = %s", (CLAW,)).fetchall()  # fmt: skip
    known = {t: {str(x).lower() for r in rows if r[0] == t for x in r[1]} for t in ("home", "work")}
    question = "Do I still watch Dark as my favourite show?"
    found = {t: set(lanes[t].search(question, k=5, as_of=AS_OF).entities) for t in ("home", "work", None)}
    assert found["home"] and found["home"] <= known["home"], (found, known)
    assert found["work"] <= known["work"], (found, known)  # "dark" is the home thread's only
    assert found[None] >= found["home"] | found["work"]
