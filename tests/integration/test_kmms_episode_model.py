"""Episodes ranked by the learned score (governance/kmms/episode_rank.py, ``HIVEMEM_KMMS_EPISODE_MODEL``, on by
default; docs/kmms.md, "First stage"): through the API, a hybrid search's hits carry their episode's probability
of being evidence, best first, and are the hits the search in process gives; with the setting off the same memory
gives the same episodes, ranked by their best round's reciprocal-rank score again."""

from __future__ import annotations

import uuid

import pytest

from hivemem.stack import Stack
from tests.integration.kmms_support import memory, search_in_process

pytestmark = pytest.mark.integration

AS_OF = "2026-06-20T00:00:00Z"
QUESTION = "How is my sourdough baking going?"


def _bakery(stack: Stack, claw: str) -> None:
    """Six sessions over June: one with two rounds about the sourdough, one with a single round about it, four
    about other things."""
    mem = memory(stack, "mem-b", claw=claw, user_id="ana")

    def rounds(*said: str) -> list[dict[str, str]]:
        out: list[dict[str, str]] = []
        for s in said:
            out += [{"role": "user", "content": s}, {"role": "assistant", "content": "Good to hear, tell me more."}]
        return out

    sessions = [
        rounds("My sourdough starter finally bubbled this morning after a week of feeding it.",
               "I baked my first sourdough loaf tonight and the crust cracked beautifully."),
        rounds("The bike chain snapped on the way to work, so I walked the last mile."),
        rounds("Baking bread has become my weekend hobby, sourdough mostly."),
        rounds("We booked the ferry to the islands for August."),
        rounds("My sister called about the wedding seating plan again."),
        rounds("The tomatoes on the balcony are finally turning red."),
    ]  # fmt: skip
    ids = [mem.add(turns, session_id=f"s-{i}", occurred_at=f"2026-06-{i + 2:02d}T09:00:00Z").episode_id
           for i, turns in enumerate(sessions)]  # fmt: skip
    mem.wait_indexed(ids, timeout_s=120)


def test_hits_carry_their_episodes_probability_and_the_setting_turns_it_off(stack: Stack) -> None:
    claw = f"bake-{uuid.uuid4().hex[:6]}"
    _bakery(stack, claw)
    mem = memory(stack, "mem-b", claw=claw, user_id="ana")
    res = mem.search(QUESTION, k=10, as_of=AS_OF)
    hits = [h for h in res.hits if h.layer == 4]
    assert len(hits) == 6  # every session, each once
    scores = [h.score for h in hits]
    assert all(0.0 < s < 1.0 for s in scores) and scores == sorted(scores, reverse=True)
    assert {h.session_id for h in hits[:2]} == {"s-0", "s-2"}  # the two sessions about the sourdough lead

    on = search_in_process(stack, claw, "ana", QUESTION, 10, AS_OF)
    assert [h.episode_id for h in on.hits] == [h.episode_id for h in hits]  # what the API served
    off = search_in_process(stack, claw, "ana", QUESTION, 10, AS_OF, changes={"episode_model": False})
    assert {h.episode_id for h in off.hits} == {h.episode_id for h in hits}
    # Off: reciprocal-rank scores, k = 10, two rankings of weight 1: at most 2 / 11.
    assert all(0.0 < h.score <= 2 / 11 + 1e-6 for h in off.hits)
    assert [h.score for h in off.hits] != [h.score for h in on.hits]
