"""Newest first within a topic (governance.kmms.recency): slots kept, topics never trade places."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from governance.kmms.recency import (
    FactEvidence,
    later_change,
    names_change,
    newer_in_topic,
    newest_first_within_topics,
    repeats,
    topics_of,
)


def _sim(table: dict[tuple[int, int], float]):  # type: ignore[no-untyped-def]
    return lambda i, j: table.get((i, j))


def test_two_hits_of_one_topic_swap_to_newest_first() -> None:
    # 0: "I live in Cape Town" (old), 1: unrelated, 2: "we moved to Hobart" (new)
    order = newest_first_within_topics([100, 500, 300], _sim({(0, 2): 0.6, (0, 1): 0.1, (1, 2): 0.2}), 0.45)
    assert order == [2, 1, 0]  # the topic keeps slots 0 and 2; the unrelated hit stays in slot 1


def test_below_threshold_nothing_moves() -> None:
    assert newest_first_within_topics([100, 300], _sim({(0, 1): 0.44}), 0.45) == [0, 1]


def test_threshold_is_inclusive_and_chains_join_a_topic() -> None:
    # 0~1 and 1~2 are close, 0 and 2 are not: one topic by the chain
    order = newest_first_within_topics([1, 2, 3], _sim({(0, 1): 0.45, (1, 2): 0.5, (0, 2): 0.1}), 0.45)
    assert order == [2, 1, 0]


def test_missing_vector_is_a_topic_of_its_own_and_ties_keep_their_order() -> None:
    assert newest_first_within_topics([1, 9], lambda i, j: None, 0.0) == [0, 1]
    assert newest_first_within_topics([5, 5, 5], lambda i, j: 1.0, 0.45) == [0, 1, 2]


def test_off_above_one() -> None:
    assert newest_first_within_topics([1, 2, 3], lambda i, j: 1.0, 1.01) == [0, 1, 2]


@given(st.lists(st.integers(0, 50), min_size=0, max_size=12), st.integers(0, 2**32 - 1))
def test_a_permutation_that_keeps_each_topics_slots(times: list[int], seed: int) -> None:
    import random

    rnd = random.Random(seed)
    n = len(times)
    topic = [rnd.randrange(3) for _ in range(n)]  # three topics; same topic = similarity 0.9
    order = newest_first_within_topics(times, lambda i, j: 0.9 if topic[i] == topic[j] else 0.0, 0.45)
    assert sorted(order) == list(range(n))
    for slot, i in enumerate(order):
        assert topic[i] == topic[slot]  # a slot stays with its topic
    for t in set(topic):
        got = [times[i] for i in order if topic[i] == t]
        assert got == sorted(got, reverse=True)


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


def test_names_change_needs_the_value_and_a_change_word() -> None:
    assert names_change("Not that it matters, but forget Severance, I'm obsessed with Fleabag now.", "Severance")
    assert not names_change("Severance is still my favourite.", "Severance")  # a repeat
    assert not names_change("I'm obsessed with Fleabag now.", "Severance")  # does not name it
    assert not names_change("Severanced now", "Severance") and not names_change("anything new", None)


def test_a_later_change_naming_the_value_is_found_by_it() -> None:
    fact = FactEvidence({"e-mar"}, 5, "Severance")
    said = [
        ("e-mar", 5, "my favourite show is Severance"),
        ("e-jun", 7, "I rewatched Severance, still great"),
        ("e-aug", 9, "forget Severance, I'm obsessed with Fleabag now"),
        ("e-jul", 8, "switched from Severance"),
    ]
    assert later_change(said, fact) == 2  # the newest change; the repeat in June changes nothing
    assert later_change(said, FactEvidence({"e-mar"}, 9, "Severance")) is None  # nothing later than the fact
    assert later_change(said, FactEvidence({"e-mar", "e-aug"}, 5, "Severance")) == 3  # its own episode is not one
    assert later_change(said, FactEvidence({"e-mar"}, 5, None)) is None
    assert later_change([], fact) is None
