"""``ask``'s answer from a piece of a long round (governance/kmms/answer.py, ``answer_window``), on the real path:
episodes through HTTP, the gate and the kmms processors into the read model, asked over HTTP. A round longer than a
unit is cut at its paragraphs (governance/kmms/units.py); a piece of a conversation's round answers with the pieces
of that round around it, a note's paragraph alone."""

from __future__ import annotations

import uuid

import pytest

from governance.kmms.phrasing import strip_roles
from governance.kmms.search_config import DEFAULT
from hivemem.stack import Stack
from producers.memory_client import MemoryClient
from projections.kmms.answer import runner_up_hit
from tests.integration.kmms_support import memory

pytestmark = pytest.mark.integration


def _paragraph(*sentences: str) -> str:
    """The sentences, repeated in turn up to ~1,100 characters: a paragraph the cut keeps whole, too long to share a
    unit with another (``MAX_CHARS``, 1,200)."""
    out: list[str] = []
    while sum(len(s) + 1 for s in out) < 1_050:
        out.append(sentences[len(out) % len(sentences)])
    return " ".join(out)


ASKED = "Can you write an influencer marketing campaign plan for the Harbor Wellness Retreats starting on May 1st?"
INTRO = _paragraph(
    "Sure, here's a detailed influencer marketing campaign plan for the Harbor Wellness Retreats, from May 1st.",
    "The campaign plan brings wellness influencers to the retreats to share what they lived there.",
    "Each influencer is chosen for an audience that cares about yoga, rest and healthy food.",
)
BUDGET = _paragraph(
    "Budget: 2,000 dollars for the creators' fees, 500 for their travel and 300 for photography.",
    "Payments are made in two parts, half when the contract is signed and half after the posts go live.",
    "Any amount not spent by June is returned to the marketing reserve.",
)
TIMELINE = _paragraph(
    "Timeline: outreach in the first week of April, contracts by mid April, visits through May.",
    "Posts go live within three days of each visit, and a recap follows at the end of the month.",
    "Results are reviewed with the team every Friday afternoon.",
)
NOTE = [
    _paragraph("The lighthouse on the north pier was built in 1871 from granite brought by barge.",
               "Its lamp was turned by clockwork that a keeper wound every four hours."),
    _paragraph("The lighthouse keeper's cottage became a small museum of ship models in 1962.",
               "Its rooms hold forty models, the oldest a whaler carved by a keeper's son."),
    _paragraph("The harbour festival is held on the second weekend of August every year.",
               "Boats are decorated with lanterns and a parade crosses the bay at dusk."),
]  # fmt: skip
AS_OF = "2026-06-01T00:00:00Z"


@pytest.fixture(scope="module")
def planner(stack: Stack) -> MemoryClient:
    mem = memory(stack, "mem-b", claw=f"pieces-{uuid.uuid4().hex[:6]}", user_id="dana")
    ids = [mem.add([{"role": "user", "content": ASKED},
                    {"role": "assistant", "content": "\n".join([INTRO, BUDGET, TIMELINE])}],
                   session_id="s-plan", occurred_at="2026-04-02T10:00:00Z").episode_id,
           mem.add("\n".join(NOTE), session_id="s-note", occurred_at="2026-04-03T10:00:00Z").episode_id]  # fmt: skip
    mem.wait_indexed(ids, timeout_s=120)
    return mem


def _said(mem: MemoryClient, question: str) -> tuple[str, str]:
    """What ``ask`` said of its answering hit (without its hedging prefix, and without the runner-up of the other
    session that follows it when that one is about the question too), and the text of the hit it answered with."""
    got = mem.ask(question, k=5, as_of=AS_OF)
    res = got.result
    top = res.answering_hit()
    assert got.answer is not None and top is not None and res.answer_layer == 4, question
    prefix = f"{res.hedging_prefix} " if res.hedging_prefix else ""
    assert got.answer.startswith(prefix), question
    said = got.answer[len(prefix) :]
    other = runner_up_hit(res, top, DEFAULT.abstain_below)
    if other is not None:  # the other session's best hit, after its day, on the lines after the answer's
        said, _, rest = said.partition(f"\n[{'3' if other.session_id == 's-note' else '2'} April 2026] ")
        assert strip_roles(other.text).split("\n")[-1] in rest, question
    return said, top.text


def test_a_piece_of_a_long_reply_answers_with_the_pieces_of_its_round_around_it(planner: MemoryClient) -> None:
    # The plan's opening names what the question asks about; the sum is in the next piece of the same reply.
    said, hit = _said(planner, "How much was allocated for influencer marketing in the Harbor Wellness Retreats plan?")
    assert hit == f"user: {ASKED}\nassistant: {INTRO}"  # the cut: the round's start, then a unit per paragraph
    assert said == "[2 April 2026] " + "\n".join([ASKED, INTRO, BUDGET])
    said, hit = _said(planner, "When are results of the influencer campaign reviewed with the team?")
    assert hit == TIMELINE  # the reply's last piece: the piece before it carries the same round, nothing after
    assert said == "[2 April 2026] " + "\n".join([BUDGET, TIMELINE])


def test_a_paragraph_of_a_note_answers_alone(planner: MemoryClient) -> None:
    said, hit = _said(planner, "When did the lighthouse keeper's cottage become a museum of ship models?")
    assert hit == NOTE[1]
    assert said == f"[3 April 2026] {NOTE[1]}"
