"""Newest first within a topic (governance.kmms.recency): slots kept, topics never trade places."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from governance.kmms.recency import newest_first_within_topics


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
