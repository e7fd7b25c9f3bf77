"""A round read against the question word by word (governance/kmms/late.py), on the real path: episodes through HTTP,
the gate and the kmms processors, the embedder's token states on Kafka (``KmmsEmbedding.tokens``), folded into the
read model (migration 36), read by the search over HTTP; and a memory embedded before token states were kept ranks
as it did."""

from __future__ import annotations

import re
import uuid
from typing import Any

import psycopg
import pytest

from governance import token_states
from governance.kmms import ranking
from governance.kmms.search_config import DEFAULT
from hivemem.stack import Stack
from producers.memory_client import MemoryClient
from projections.kmms.answer import runner_up_hit
from tests.integration.kmms_support import memory, search_in_process

pytestmark = pytest.mark.integration

# Two friends talking (every turn a user's, named, as hivemem bench memory sends LoCoMo): the board games Nate played
# are told in passing, the other sessions share the question's words without answering it.
SESSIONS = [
    ["Nate: The gaming party was a great success! We even played some Chess after the tournament.",
     "Joanna: That sounds like a fun night, I love a good party."],
    ["Joanna: Wow, congrats on the win! What game were you playing?",
     "Nate: A racing game on the console, I practised every evening for weeks."],
    ["Joanna: Do you have any games you would recommend for a rainy day?",
     "Nate: Honestly anything with friends is good, I just like the company."],
    ["Nate: We played this game Catan, you build settlements and trade resources. I love it!",
     "Joanna: Nice, I have heard good things about it."],
    ["Joanna: My dog chewed my new shoes today.", "Nate: Oh no, poor shoes! Is he still a puppy?"],
]  # fmt: skip
QUESTION = "What board games has Nate played?"
AS_OF = "2026-06-01T00:00:00Z"
CLAW = f"late-{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="module")
def friends(stack: Stack) -> MemoryClient:
    mem = memory(stack, "mem-b", claw=CLAW, user_id="nate")
    ids = [mem.add([{"role": "user", "content": line} for line in turns], session_id=f"s-{i}",
                   occurred_at=f"2026-05-{i + 1:02d}T10:00:00Z").episode_id
           for i, turns in enumerate(SESSIONS)]  # fmt: skip
    mem.wait_indexed(ids, timeout_s=120)
    return mem


def _vectors(stack: Stack) -> list[tuple[Any, ...]]:
    with psycopg.connect(stack.settings.require_database(), autocommit=True) as conn:
        return conn.execute("SELECT unit_id, kind, tokens FROM kmms.kmms_vectors WHERE tenant = 'mem-b' "
                            "AND claw_id = %s ORDER BY unit_id", (CLAW,)).fetchall()  # fmt: skip


def test_each_rounds_vector_carries_its_token_states_and_nothing_else_does(stack: Stack, friends: MemoryClient) -> None:
    rows = _vectors(stack)
    units = [r for r in rows if r[1] == "unit"]
    assert len(units) == sum(len(turns) for turns in SESSIONS)  # every turn a user's: a round each
    for unit_id, _, tokens in units:
        assert tokens is not None and len(tokens) % token_states.DIM == 0, unit_id
        assert 1 <= len(tokens) // token_states.DIM <= token_states.MAX_TOKENS
    assert all(tokens is None for _, kind, tokens in rows if kind != "unit")  # nodes' (and sentences') have none


def test_the_search_reads_the_rounds_word_by_word_and_the_api_ranks_as_that(
    stack: Stack, friends: MemoryClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[dict[str, float]] = []
    shipped = ranking.window_maxsim

    def spy(*args: Any) -> dict[str, float]:
        got = shipped(*args)
        reads.append(got)
        return got

    monkeypatch.setattr(ranking, "window_maxsim", spy)
    late = search_in_process(stack, CLAW, "nate", QUESTION, 5, AS_OF)
    assert reads and len(reads[0]) == sum(len(turns) for turns in SESSIONS)  # every round read, each one's figure
    api = friends.search(QUESTION, k=5, as_of=AS_OF)
    assert [h.session_id for h in api.hits] == [h.session_id for h in late.hits]
    assert {"s-0", "s-3"} <= {h.session_id for h in api.hits[:3]}  # Chess and Catan, told in passing


def test_a_memory_embedded_without_token_states_ranks_as_before(stack: Stack, friends: MemoryClient) -> None:
    """The vectors' token states taken away (as a memory embedded before migration 36 holds them): the search ranks by
    the episode model without its two word-by-word figures, as one without the question's states does."""
    plain = search_in_process(stack, CLAW, "nate", QUESTION, 5, AS_OF, changes={}, tokens=False)
    with psycopg.connect(stack.settings.require_database(), autocommit=True) as conn:
        kept = conn.execute("SELECT unit_id, tokens FROM kmms.kmms_vectors WHERE tenant = 'mem-b' AND claw_id = %s "
                            "AND tokens IS NOT NULL", (CLAW,)).fetchall()  # fmt: skip
        conn.execute("UPDATE kmms.kmms_vectors SET tokens = NULL WHERE tenant = 'mem-b' AND claw_id = %s", (CLAW,))
        try:
            before = friends.search(QUESTION, k=5, as_of=AS_OF)
        finally:
            for unit_id, tokens in kept:
                conn.execute("UPDATE kmms.kmms_vectors SET tokens = %s WHERE tenant = 'mem-b' AND unit_id = %s",
                             (tokens, unit_id))  # fmt: skip
    assert [(h.session_id, h.score) for h in before.hits] == [(h.session_id, h.score) for h in plain.hits]
    again = friends.search(QUESTION, k=5, as_of=AS_OF)
    assert [h.score for h in again.hits] != [h.score for h in before.hits]  # the states back, the reading again


def test_a_rounds_vector_and_its_states_stay_on_its_page(stack: Stack, friends: MemoryClient) -> None:
    """Migration 37: a row of a vector (1,544 bytes) and its states (here 5-13 pieces of 128 bytes) is past Postgres's
    default 2 KB, where its vector or its states went to the TOAST table, read back through its index by every exact
    scan and every late reading. Now neither does."""
    with psycopg.connect(stack.settings.require_database(), autocommit=True) as conn:
        rows = conn.execute("SELECT unit_id, pg_column_size(v.*), pg_column_toast_chunk_id(tokens), "
                            "pg_column_toast_chunk_id(embedding) FROM kmms.kmms_vectors v WHERE tenant = 'mem-b' "
                            "AND claw_id = %s AND tokens IS NOT NULL", (CLAW,)).fetchall()  # fmt: skip
    assert rows and all(size > 2_032 for _, size, _, _ in rows)  # each past the default threshold
    assert [r[0] for r in rows if r[2] is not None or r[3] is not None] == []


def test_the_answer_is_the_first_hit_of_its_layer_and_its_confidence_is_that_hits(friends: MemoryClient) -> None:
    # The ranking (the episode model, the reading word by word) often puts first a round whose pooled vector is not
    # the closest to the question: the answer (what `ask` shows), its confidence and the provenance's last node are
    # the first hit's all the same. Before 2026-12-06 the search's confidence and provenance were the closest hit's.
    questions = (QUESTION, "Which game did Nate win with?", "What game does Nate love?", "What did the dog chew?",
                 "What would Nate recommend for a rainy day?")  # fmt: skip
    apart = 0
    for question in questions:
        res = friends.search(question, k=5, as_of=AS_OF)
        top = next(h for h in [*res.context, *res.hits] if h.layer == res.answer_layer)
        assert (res.provenance[-1], res.confidence, res.hedging_prefix) == (top.node_id, top.confidence,
                                                                          top.hedging), question  # fmt: skip
        closest = max((h for h in res.hits if h.layer == top.layer), key=lambda h: h.similarity)
        apart += top.layer == 4 and closest.similarity > top.similarity
        answer = friends.ask(question, k=5, as_of=AS_OF).answer
        assert answer is not None and top.text.split(": ", 2)[-1] in answer, question
    assert apart >= 1  # the case the rule is for: the first hit is not the closest
    for question in questions:  # with one hit: the answer is still shown (a node beyond the first k joins context)
        one = friends.search(question, k=1, as_of=AS_OF)
        shown = [h for h in [*one.context, *one.hits] if h.node_id == one.provenance[-1]]
        assert shown and shown[0].layer == one.answer_layer and shown[0].confidence == one.confidence, question
        assert one.abstained or friends.ask(question, k=1, as_of=AS_OF).answer is not None, question


def _turns_around(text: str) -> str:
    """The day of the friends' session that holds the round ``text`` (a hit's, "user: Nate: ...") and its turns
    around it, one per line."""
    said = text.split(": ", 1)[1]
    session = next(i for i, turns in enumerate(SESSIONS) if said in turns)
    at = SESSIONS[session].index(said)
    return f"[{session + 1} May 2026] " + "\n".join(SESSIONS[session][max(0, at - 1) : at + 2])


def test_ask_answers_a_turn_with_the_turns_around_it(friends: MemoryClient) -> None:
    # A turn alone is often a question whose answer is the next turn ("What game were you playing?" -> "A racing
    # game..."): `ask` answers with the answering round and the turns before and after it in its episode, each
    # without its role, after the day it was said (governance/kmms/answer.py); then, read the same way, the first
    # hit of another session that is about the question too (its similarity at least the abstention threshold).
    # The search's hits are unchanged.
    windows = runners_up = 0
    for question in (QUESTION, "Which game did Nate win with?", "What did the dog chew?",
                     "What would Nate recommend for a rainy day?"):  # fmt: skip
        got = friends.ask(question, k=5, as_of=AS_OF)
        res = got.result
        assert not res.abstained and res.answer_layer == 4, question
        top = next(h for h in res.hits if h.node_id == res.provenance[-1])
        shown = _turns_around(top.text)
        other = runner_up_hit(res, top, DEFAULT.abstain_below)
        shown += f"\n{_turns_around(other.text)}" if other is not None else ""
        assert got.answer == (f"{res.hedging_prefix} {shown}" if res.hedging_prefix else shown), question
        windows += "\n" in shown
        runners_up += other is not None
    assert windows == 4  # every session holds two turns: each answer shows both
    assert 1 <= runners_up < 4  # the board games are told in two sessions; the dog chewed in one


def test_ask_answers_a_question_told_in_two_sessions_with_both(friends: MemoryClient) -> None:
    # The board games Nate played are told in two sessions (Chess after the party, Catan later), and the racing game
    # he won with in a third: `ask` says the answering session's turns, then those of the first hit of another
    # session that is about the question too, each after its day. A board game is named either way.
    got = friends.ask(QUESTION, k=5, as_of=AS_OF)
    assert got.answer is not None and ("Chess" in got.answer or "Catan" in got.answer)
    days = re.findall(r"\[(\d+ May 2026)\]", got.answer)
    assert len(days) == 2 and days[0] != days[1]  # two sessions, each once
    # Nothing but the dog's session is about what the dog chewed: its answer is that session's alone.
    dog = friends.ask("What did the dog chew?", k=5, as_of=AS_OF).answer
    assert dog is not None and re.findall(r"\[(\d+ May 2026)\]", dog) == ["5 May 2026"] and "shoes" in dog
