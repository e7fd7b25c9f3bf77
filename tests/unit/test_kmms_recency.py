"""A current fact that a later hit may have changed (governance.kmms.recency): topics, and the later hit."""

from __future__ import annotations

from governance.kmms.recency import FactEvidence, newer_in_topic, repeats, topics_of


def _sim(table: dict[tuple[int, int], float]):  # type: ignore[no-untyped-def]
    return lambda i, j: table.get((i, j))


def test_topics_are_labelled_by_their_first_hit() -> None:
    # 0~2 and 2~3 close (a chain), 1 alone: labels are each component's first index
    assert topics_of(4, _sim({(0, 2): 0.5, (2, 3): 0.6, (1, 3): 0.2}), 0.45) == [0, 1, 0, 0]
    assert topics_of(3, _sim({(1, 2): 0.9}), 0.45) == [0, 1, 1]
    assert topics_of(0, lambda i, j: 1.0, 0.45) == []


# Hits in ranked order as (episode, time): the fact "favourite show: Dark" was read from e-may (time 5).
HITS = [
    ("e-aug", 8, "I've moved on to Fleabag", 0.5),
    ("e-other", 9, "a lemon tart", 0.2),
    ("e-may", 5, "my show is Dark", 0.6),
    ("e-june", 6, "I watched Severance", 0.4),
]


def test_a_later_hit_on_the_facts_topic_outdates_it() -> None:
    topic = [0, 1, 0, 0]  # e-aug, e-may and e-june tell of the same thing; e-other does not
    assert newer_in_topic(HITS, topic, FactEvidence({"e-may"}, 5)) == 0  # the newest of them: e-aug
    # Unrelated later hits do not count, however new (e-other, time 9).
    assert newer_in_topic(HITS, [0, 1, 0, 3], FactEvidence({"e-may"}, 5)) == 0
    assert newer_in_topic(HITS, [0, 1, 2, 3], FactEvidence({"e-may"}, 5)) is None


def test_a_fact_as_new_as_its_topic_or_read_from_the_newest_hit_stands() -> None:
    topic = [0, 1, 0, 0]
    assert newer_in_topic(HITS, topic, FactEvidence({"e-may"}, 8)) is None  # its own time is not earlier
    assert newer_in_topic(HITS, topic, FactEvidence({"e-may", "e-aug"}, 8)) is None  # read from e-aug too
    assert newer_in_topic(HITS, topic, FactEvidence({"e-may", "e-june"}, 6)) == 0  # e-aug is still later
    assert newer_in_topic(HITS, topic, FactEvidence({"e-elsewhere"}, 1)) is None  # its episodes are not hits
    assert newer_in_topic([], [], FactEvidence({"e-may"}, 5)) is None


def test_ties_go_to_the_better_ranked_hit() -> None:
    hits = [("a", 5, "", 0.5), ("b", 7, "", 0.5), ("c", 7, "", 0.5)]
    assert newer_in_topic(hits, [0, 0, 0], FactEvidence({"a"}, 5)) == 1


def test_a_later_hit_that_repeats_the_value_confirms_it() -> None:
    hits = [("e-mar", 9, "Dark is still my favourite show", 0.5), ("e-jan", 5, "my favourite show is Dark", 0.5)]
    assert newer_in_topic(hits, [0, 0], FactEvidence({"e-jan"}, 5, "Dark")) is None
    # naming the old value beside a change is a change
    hits = [("e-aug", 9, "forget Dark, I'm into Andor now", 0.5), ("e-jan", 5, "my favourite show is Dark", 0.5)]
    assert newer_in_topic(hits, [0, 0], FactEvidence({"e-jan"}, 5, "Dark")) == 0


def test_repeats_needs_the_whole_value_and_no_change_word() -> None:
    assert repeats("Dark is still my favourite", "dark")
    assert not repeats("Darkness falls", "Dark")  # whole words only
    assert not repeats("I no longer watch Dark", "Dark")
    assert not repeats("anything", None) and not repeats("anything", " ")
    assert repeats("I live in Porto (Portugal)", "Porto")


def test_a_later_hit_must_answer_the_question_about_as_well_as_the_facts_own() -> None:
    # "I moved to Porto" (0.25) made the fact; "a risotto for my new neighbours" (0.10) is later, same topic
    hits = [("e-porto", 5, "I moved to Porto", 0.25), ("e-risotto", 9, "a risotto for my new neighbours", 0.10)]
    fact = FactEvidence({"e-porto"}, 5, "Porto")
    assert newer_in_topic(hits, [0, 0], fact) is None
    assert newer_in_topic(hits, [0, 0], fact, as_relevant=0.4) == 1  # 0.10 >= 0.4 * 0.25
    assert newer_in_topic([("e-porto", 5, "", 0.25), ("e-x", 9, "", 0.15)], [0, 0], fact) == 1  # 0.15 >= 0.6 * 0.25
