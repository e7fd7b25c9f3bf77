"""``hivemem bench memory --ask``'s score (``bench.memory_answers``): the share of the gold answer's words an answer
holds, function words out, an ISO date read as its day, month and year."""

from __future__ import annotations

from bench.memory_answers import answer_share, answer_words


def test_the_words_of_an_answer_leave_function_words_out_and_read_iso_dates() -> None:
    assert answer_words("The Kia Niro, in 2023!") == {"kia", "niro", "2023"}
    assert answer_words("moved on 2023-05-08") == {"moved", "2023", "05", "08", "8", "may"}
    assert answer_words("2023-13-40 is no date") == {"2023", "13", "40", "no", "date"}


def test_the_share_counts_the_gold_words_the_answer_holds() -> None:
    assert answer_share("[8 May 2023] Caroline: I went to the support group yesterday", "7 May 2023") == 2 / 3
    assert answer_share("Based on our discussions... Globex", "Globex") == 1.0
    assert answer_share("a fact: 2023-05-07", "7 May 2023") == 1.0
    assert answer_share(None, "Globex") == 0.0 and answer_share("", "Globex") == 0.0
    assert answer_share("anything", "the") == 0.0  # no gold words: the caller does not score it
