"""``ask``'s answer from an L4 round (``governance.kmms.phrasing.answer_window``): a round that is one turn of a
conversation sent turn by turn answers with the turns around it; any other round answers alone."""

from __future__ import annotations

from governance.kmms.phrasing import answer_window, one_turn

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
