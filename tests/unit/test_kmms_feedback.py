"""governance.kmms.feedback: the first stage's candidates ordered again with the moved question's similarities."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from governance.kmms.feedback import feedback_order
from governance.kmms.fusion import rrf

FUSED = [("a", 0.040), ("b", 0.035), ("c", 0.030), ("d", 0.025), ("e", 0.020)]


def ids(out: list[tuple[str, float]]) -> list[str]:
    return [u for u, _ in out]


def test_a_candidate_the_moved_question_likes_rises() -> None:
    out = feedback_order(FUSED, {"a": 0.9, "b": 0.1, "c": 0.2, "d": 0.3, "e": 0.8}, 1.0)
    assert ids(out).index("e") < 4
    assert ids(out)[0] == "a"


def test_the_first_stays_first_even_when_the_moved_question_likes_it_least() -> None:
    out = feedback_order(FUSED, {"a": 0.0, "b": 0.9, "c": 0.8, "d": 0.7, "e": 0.6}, 1.0)
    assert ids(out)[0] == "a"


def test_the_rest_is_the_fusion_of_the_two_orders() -> None:
    sims = {"a": 0.5, "b": 0.1, "c": 0.2, "d": 0.9, "e": 0.4}
    by_sim = ["d", "e", "c", "b"]
    assert ids(feedback_order(FUSED, sims, 1.0))[1:] == ids(rrf([["b", "c", "d", "e"], by_sim]))


def test_the_scores_stay_those_of_the_places() -> None:
    out = feedback_order(FUSED, {"a": 0.0, "b": 0.1, "c": 0.2, "d": 0.3, "e": 0.8}, 1.0)
    assert [s for _, s in out] == [s for _, s in FUSED]


def test_weight_zero_keeps_the_order() -> None:
    assert feedback_order(FUSED, {"a": 0.0, "b": 0.1, "c": 0.2, "d": 0.3, "e": 0.8}, 0.0) == FUSED


def test_a_candidate_without_a_vector_ranks_last_by_feedback() -> None:
    sims: dict[str, float | None] = {"a": 0.5, "b": None, "c": 0.2, "d": 0.3, "e": 0.4}
    assert feedback_order(FUSED, sims, 1.0) == feedback_order(FUSED, {**sims, "b": -1.0}, 1.0)
    assert ids(feedback_order(FUSED, sims, 1.0)) != ids(feedback_order(FUSED, {**sims, "b": 1.0}, 1.0))


def test_ties_keep_the_first_stages_order() -> None:
    assert feedback_order(FUSED, dict.fromkeys("abcde", 0.3), 1.0) == FUSED


def test_two_candidates_or_fewer_are_left_alone() -> None:
    assert feedback_order(FUSED[:2], {"a": 0.0, "b": 1.0}, 1.0) == FUSED[:2]
    assert feedback_order([], {}, 1.0) == []


def test_a_negative_weight_is_refused() -> None:
    with pytest.raises(ValueError, match="weight"):
        feedback_order(FUSED, {}, -0.5)


SIMS = st.lists(st.floats(-1, 1) | st.none(), min_size=30, max_size=30)


@given(st.lists(st.floats(0, 1), max_size=30), SIMS, st.floats(0, 3))
def test_a_permutation_of_the_candidates_with_their_scores_in_place(scores: list[float], sims: list[float | None],
                                                                    w: float) -> None:  # fmt: skip
    fused = [(f"u{i}", s) for i, s in enumerate(sorted(scores, reverse=True))]
    out = feedback_order(fused, {f"u{i}": s for i, s in enumerate(sims)}, w)
    assert sorted(ids(out)) == sorted(ids(fused))
    assert [s for _, s in out] == [s for _, s in fused]
    assert out[:1] == fused[:1]
