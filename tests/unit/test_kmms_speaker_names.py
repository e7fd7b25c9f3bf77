"""A question is embedded without the memory's speakers' names (``governance.kmms.speakers``): which labels are
names, which names are speakers, and what a question keeps once they are out."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from governance.kmms.speakers import is_name, speakers, without_speakers


@pytest.mark.parametrize("label", ["Melanie", "Jo Ann", "Mr. Smith", "Émile", "O'Neil", "Mary-Kate Olsen Twin"])
def test_a_name_is_one_to_three_capitalised_words(label: str) -> None:
    assert is_name(label) is (len(label.split(" ")) <= 3)


@pytest.mark.parametrize("label", ["note to self", "Q1", "TODO 2", "", "melanie", "Step 3", "Dr  Who"])
def test_other_labels_are_not_names(label: str) -> None:
    assert not is_name(label)


def test_a_speaker_begins_at_least_two_rounds() -> None:
    labels = ["Melanie", "Caroline", "Melanie", None, "Note", "Caroline", "Q1", "Q1", " Melanie "]
    assert speakers(labels) == {"Melanie", "Caroline"}  # "Note" once; "Q1" is no name
    assert speakers(labels, min_turns=1) == {"Melanie", "Caroline", "Note"}
    assert speakers([]) == frozenset()


@pytest.mark.parametrize(("question", "expected"), [
    ("What did Melanie paint?", "What did paint?"),
    ("What are Caroline's plans for the summer?", "What are plans for the summer?"),
    ("What are Caroline’s plans?", "What are plans?"),
    ("When did Melanie and Caroline meet?", "When did and meet?"),
    ("Did Melanies paint? Did Mel paint?", "Did Melanies paint? Did Mel paint?"),  # whole words only
    ("what did melanie paint?", "what did melanie paint?"),  # a name is capitalised
    ("Melanie?", "Melanie?"),  # nothing else would be left: the question itself
])  # fmt: skip
def test_a_question_without_the_speakers(question: str, expected: str) -> None:
    assert without_speakers(question, {"Melanie", "Caroline"}) == expected


def test_no_speakers_leave_the_question_as_it_is() -> None:
    q = "  What did   I paint , Melanie?  "
    assert without_speakers(q, frozenset()) is q


@given(st.text(max_size=80), st.sets(st.sampled_from(["Melanie", "Jo Ann", "Ann", "Bo"]), max_size=3))
def test_what_is_left_never_names_a_speaker_as_a_word(question: str, names: set[str]) -> None:
    out = without_speakers(question, names)
    if out != question:  # a name was taken out
        assert not any(f" {n} " in f" {out} " for n in names)
