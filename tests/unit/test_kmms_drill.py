"""The drill from a matched fact to its episodes (governance.kmms.drill): which facts drill, the order of
their episodes, and how they merge into the first stage's ranking."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from governance.kmms.drill import FactCandidate, evidence_order, facts_to_drill, merge_drilled


def test_only_keyed_l2_facts_at_or_above_the_threshold_drill_best_first() -> None:
    nodes = [
        FactCandidate("summary", 3, None, 0.9),
        FactCandidate("weak", 2, "city", 0.34),
        FactCandidate("at", 2, "city", 0.35),
        FactCandidate("best", 2, "employer", 0.6),
        FactCandidate("keyless", 2, None, 0.8),
        FactCandidate("third", 2, "pet", 0.5),
    ]
    assert facts_to_drill(nodes, 0.35, 2) == ["best", "third"]
    assert facts_to_drill(nodes, 0.35, 5) == ["best", "third", "at"]
    assert facts_to_drill(nodes, 1.01, 5) == []


def test_a_facts_own_episodes_come_before_its_linked_versions_and_each_episode_once() -> None:
    assert evidence_order([(["e2", "e1"], ["e0"]), (["e1", "e5"], [])]) == ["e2", "e1", "e0", "e5"]
    assert evidence_order([]) == []


def test_a_drilled_episode_gains_its_reciprocal_rank_and_moves_up() -> None:
    ranked = [("a", 0.030), ("b", 0.020), ("c", 0.010)]
    out = merge_drilled(ranked, ["c"], k=60, weight=1.0)
    assert [e for e, _ in out] == ["a", "c", "b"]
    assert dict(out)["c"] == pytest.approx(0.010 + 1 / 61)


def test_a_drilled_episode_absent_from_the_ranking_starts_at_zero() -> None:
    out = merge_drilled([("a", 0.030), ("b", 0.010)], ["x", "y"], k=60, weight=1.0)
    assert [e for e, _ in out] == ["a", "x", "y", "b"]
    assert dict(out)["y"] == pytest.approx(1 / 62)


def test_the_order_the_caller_gave_holds_for_what_did_not_move() -> None:
    # A time window's episodes first (higher scores after lower ones): only the drilled episode moves.
    ranked = [("w1", 0.010), ("w2", 0.009), ("r1", 0.020), ("r2", 0.015)]
    out = merge_drilled(ranked, ["r2"], k=60, weight=1.0)
    assert [e for e, _ in out] == ["r2", "w1", "w2", "r1"]


def test_a_weight_of_zero_changes_no_place_and_bad_settings_are_refused() -> None:
    ranked = [("a", 0.03), ("b", 0.02)]
    assert merge_drilled(ranked, ["b"], k=60, weight=0.0) == ranked
    with pytest.raises(ValueError):
        merge_drilled(ranked, ["b"], k=-1, weight=1.0)
    with pytest.raises(ValueError):
        merge_drilled(ranked, ["b"], k=60, weight=-1.0)


_ids = st.sampled_from([f"e{i}" for i in range(12)])


@given(st.lists(st.tuples(_ids, st.floats(0, 0.05)), unique_by=lambda x: x[0]), st.lists(_ids, unique=True),
       st.floats(0, 2))  # fmt: skip
def test_the_merge_is_a_stable_permutation_with_the_gains(ranked: list[tuple[str, float]], drilled: list[str],
                                                         weight: float) -> None:  # fmt: skip
    out = merge_drilled(ranked, drilled, k=60, weight=weight)
    ids = [e for e, _ in out]
    assert sorted(ids) == sorted({*(e for e, _ in ranked), *drilled})
    base = dict(ranked)
    for r, e in enumerate(drilled, start=1):
        assert dict(out)[e] == pytest.approx(base.get(e, 0.0) + weight / (60 + r))
    kept = [e for e, _ in ranked if e not in drilled]
    assert [e for e in ids if e in kept] == kept


def test_an_episode_that_must_follow_others_is_put_right_after_the_last_of_them() -> None:
    # The superseded value's episode "old" gains more than the current one's "new", and still follows it.
    ranked = [("a", 0.030), ("old", 0.020), ("b", 0.012)]
    out = merge_drilled(ranked, ["new", "old"], k=60, weight=1.0, after={"old": {"new"}})
    assert [e for e, _ in out] == ["a", "new", "old", "b"]
    assert dict(out)["old"] == dict(out)["new"] == pytest.approx(1 / 61)
    # Already after it, or following an episode that is not there: nothing moves.
    same = merge_drilled([("new", 0.05), ("old", 0.01)], ["new", "old"], k=60, weight=1.0, after={"old": {"new"}})
    assert [e for e, _ in same] == ["new", "old"]
    alone = merge_drilled(ranked, ["old"], k=60, weight=1.0, after={"old": {"gone"}})
    assert [e for e, _ in alone] == ["old", "a", "b"]
