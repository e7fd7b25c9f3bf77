"""``ask``'s answer from an L4 round (``governance.kmms.answer``): a round that is one turn of a conversation sent
turn by turn answers with the turns around it, a piece of a round cut into pieces with the pieces of its round
around it, any other round alone; after the day it was said."""

from __future__ import annotations

import pytest

from governance.kmms.answer import answer_window, evidence_answer, plain_answer, runner_up, said_on, with_runner_up
from governance.kmms.phrasing import one_turn, round_piece

ASKS = "user: Caroline: That bowl is gorgeous! Did you make it?"
BEFORE = "user: Melanie: Here is a photo of my black and white bowl."
AFTER = "user: Melanie: Yes, in my pottery class last week."
ROUND = "user: Did you make it?\nassistant: I am an assistant, I make nothing."
# A user's round whose reply is longer than a unit: the user's line, the reply's opening, then pieces without a role.
QUESTION = "user: Can you write a campaign plan for the retreats?"
OPENING = "assistant: Sure, here's a detailed campaign plan for the retreats."
BUDGET = "Budget: 2,000 dollars for the creators' fees."
TIMELINE = "Timeline: outreach in April, visits through May."


def test_one_turn_counts_the_lines_that_open_with_a_speaker() -> None:
    assert one_turn(ASKS) and one_turn("assistant: Sure.\nA second paragraph of the same reply.")
    assert not one_turn(ROUND)  # a user's round with the assistant's reply: two turns
    assert not one_turn("A note without any speaker.") and not one_turn("")


def test_a_round_piece_has_no_line_that_opens_with_a_speaker() -> None:
    assert round_piece(BUDGET) and round_piece("Two lines\nof the reply, neither a turn's start.")
    assert not round_piece(OPENING) and not round_piece(ROUND) and not round_piece("intro\nassistant: Sure.")


@pytest.mark.parametrize("conversation", [True, False])
def test_a_turn_answers_with_the_turns_before_and_after_it(conversation: bool) -> None:
    assert answer_window(BEFORE, ASKS, AFTER, conversation) == (
        "Melanie: Here is a photo of my black and white bowl.\n"
        "Caroline: That bowl is gorgeous! Did you make it?\n"
        "Melanie: Yes, in my pottery class last week."
    )
    assert (
        answer_window(None, ASKS, AFTER, conversation)
        == "Caroline: That bowl is gorgeous! Did you make it?\n" + (AFTER[6:])
    )
    assert answer_window(None, ASKS, None, conversation) == ASKS[6:]  # an episode of one turn


def test_a_round_of_several_turns_or_a_neighbour_that_is_one_answers_alone() -> None:
    assert answer_window(BEFORE, ROUND, AFTER, True) == "Did you make it?\nI am an assistant, I make nothing."
    assert answer_window(ROUND, ASKS, QUESTION + "\nassistant: Sure.", True) == ASKS[6:]  # two turns: left out


def test_a_piece_of_a_long_round_answers_with_the_pieces_of_its_round_around_it() -> None:
    opening, budget, timeline = OPENING[11:], BUDGET, TIMELINE
    # the reply's opening: the user's turn before it (a turn too), the piece after it (it carries on the round)
    assert answer_window(QUESTION, OPENING, BUDGET, True) == f"{QUESTION[6:]}\n{opening}\n{budget}"
    # a piece in the middle, and the last one: the pieces before and after it are its round's
    assert answer_window(OPENING, BUDGET, TIMELINE, True) == f"{opening}\n{budget}\n{timeline}"
    assert answer_window(BUDGET, TIMELINE, None, True) == f"{budget}\n{timeline}"
    # the next round is not the piece's: its user's turn opens it
    assert answer_window(BUDGET, TIMELINE, "user: Thanks!\nassistant: You're welcome.", True) == f"{budget}\n{timeline}"
    # a round of two turns cut after the user's line and the reply's start: the next piece carries it on
    assert answer_window(None, QUESTION + "\n" + OPENING, BUDGET, True) == f"{QUESTION[6:]}\n{opening}\n{budget}"


def test_a_paragraph_of_a_note_answers_alone() -> None:
    assert answer_window("The first paragraph.", "The second.", "The third.", False) == "The second."


def test_an_evidence_answer_opens_with_the_day_it_was_said_in_utc() -> None:
    may_8 = 1683587700000  # 2023-05-08T23:15:00Z
    assert said_on(may_8) == "[8 May 2023]" and said_on(may_8 + 3_600_000) == "[9 May 2023]"  # UTC's day
    assert said_on(0) == "[1 January 1970]" and said_on(-86_400_000) == "[31 December 1969]"
    assert evidence_answer(None, ASKS, AFTER, may_8, True) == "[8 May 2023] " + answer_window(None, ASKS, AFTER, True)
    assert evidence_answer(BEFORE, ROUND, None, None, True) == answer_window(BEFORE, ROUND, None, True)  # no day
    assert evidence_answer(OPENING, BUDGET, None, may_8, True) == f"[8 May 2023] {OPENING[11:]}\n{BUDGET}"


def test_a_hit_read_alone_is_a_facts_value_or_its_text_without_roles() -> None:
    assert plain_answer(2, "Globex", "user: I work at Globex now.") == "Globex"
    assert plain_answer(2, None, "user: I work at Globex now.") == "I work at Globex now."
    assert plain_answer(3, "ignored", ROUND) == "Did you make it?\nI am an assistant, I make nothing."


def test_the_runner_up_is_the_first_hit_of_another_session_about_the_question() -> None:
    hits = [("s1", 0.62), ("s1", 0.55), ("s2", 0.21), ("s3", 0.44), ("s4", 0.50)]
    assert runner_up(hits, "s1", 0.30) == 3  # s2's hit is under the threshold: not about the question
    assert runner_up(hits, "s1", 0.20) == 2  # the ranking's order, not the closest (s4 is closer than s2 and s3)
    assert runner_up(hits, "s3", 0.30) == 0  # an answer from below the first hit: the first hit is of another session
    assert runner_up(hits, "s1", 0.70) is None and runner_up([("s1", 0.9)], "s1", 0.3) is None
    assert runner_up([], "s1", 0.3) is None
    assert runner_up(hits, "s1", 0.44) == 3  # at the threshold is about it


def test_ask_says_the_runner_up_after_the_answer_on_a_line_of_its_own() -> None:
    assert (
        with_runner_up("[8 May 2023] I paint.", "[9 May 2023] A sunset.")
        == "[8 May 2023] I paint.\n[9 May 2023] A sunset."
    )
    assert with_runner_up("[8 May 2023] I paint.", None) == "[8 May 2023] I paint."
    assert with_runner_up("[8 May 2023] I paint.", "") == "[8 May 2023] I paint."
