"""``ask``'s answer from an L4 round (``governance.kmms.answer``): a round that is one turn of a conversation sent
turn by turn answers with the turns around it, any other round alone; after the day it was said."""

from __future__ import annotations

from governance.kmms.answer import answer_window, evidence_answer, said_on
from governance.kmms.phrasing import one_turn

ASKS = "user: Caroline: That bowl is gorgeous! Did you make it?"
BEFORE = "user: Melanie: Here is a photo of my black and white bowl."
AFTER = "user: Melanie: Yes, in my pottery class last week."
ROUND = "user: Did you make it?\nassistant: I am an assistant, I make nothing."


def test_one_turn_counts_the_lines_that_open_with_a_speaker() -> None:
    assert one_turn(ASKS) and one_turn("assistant: Sure.\nA second paragraph of the same reply.")
    assert not one_turn(ROUND)  # a user's round with the assistant's reply: two turns
    assert not one_turn("A note without any speaker.") and not one_turn("")


def test_a_turn_answers_with_the_turns_before_and_after_it() -> None:
    assert answer_window(BEFORE, ASKS, AFTER) == (
        "Melanie: Here is a photo of my black and white bowl.\n"
        "Caroline: That bowl is gorgeous! Did you make it?\n"
        "Melanie: Yes, in my pottery class last week."
    )
    assert answer_window(None, ASKS, AFTER) == "Caroline: That bowl is gorgeous! Did you make it?\n" + AFTER[6:]
    assert answer_window(None, ASKS, None) == ASKS[6:]  # an episode of one turn


def test_a_round_of_several_turns_or_a_neighbour_that_is_one_answers_alone() -> None:
    assert answer_window(BEFORE, ROUND, AFTER) == "Did you make it?\nI am an assistant, I make nothing."
    assert answer_window(ROUND, ASKS, "A note.") == ASKS[6:]  # neighbours that are no single turn are left out


def test_an_evidence_answer_opens_with_the_day_it_was_said_in_utc() -> None:
    may_8 = 1683587700000  # 2023-05-08T23:15:00Z
    assert said_on(may_8) == "[8 May 2023]" and said_on(may_8 + 3_600_000) == "[9 May 2023]"  # UTC's day
    assert said_on(0) == "[1 January 1970]" and said_on(-86_400_000) == "[31 December 1969]"
    assert evidence_answer(None, ASKS, AFTER, may_8) == "[8 May 2023] " + answer_window(None, ASKS, AFTER)
    assert evidence_answer(BEFORE, ROUND, None, None) == answer_window(BEFORE, ROUND, None)  # no day known
