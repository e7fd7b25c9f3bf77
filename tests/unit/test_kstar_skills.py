"""KSTAR skill maturity (seed 003 §3.2.3, X-23): levels at and around each threshold, exact rates, updates."""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import given

from governance.kstar.records import KstarRefusal, Skill, parse_record
from governance.kstar.skills import MaturityRule, apply_outcome, level_for

AT = "2026-01-31T15:00:00Z"


def skill(**maturity: Any) -> Skill:
    s = parse_record("skill", {"id": "sk-recursion", "name": "recursion_feedback",
                               "description": "Feedback on recursion exercises",
                               "learned_from": {"traces": ["trace-xyz-789"], "explicit_training": False},
                               "definition": {"triggers": ["artifact_evaluation"], "procedure": "rubric-v2 walk"},
                               "maturity": maturity}, AT)  # fmt: skip
    assert isinstance(s, Skill)
    return s


@pytest.mark.parametrize("uses,successes,level", [
    (0, 0, "novice"),
    (4, 4, "novice"),          # too few uses, however good
    (5, 3, "competent"),       # 5 uses, exactly 0.6
    (5, 2, "novice"),          # 0.4
    (100, 59, "novice"),       # 0.59 < 0.6
    (100, 60, "competent"),    # 0.60
    (19, 19, "competent"),     # one use short of proficient
    (20, 15, "proficient"),    # 20 uses, exactly 0.75
    (20, 14, "competent"),     # 0.70
    (100, 74, "competent"),    # 0.74
    (100, 75, "proficient"),
    (49, 49, "proficient"),    # one use short of expert
    (50, 45, "expert"),        # 50 uses, exactly 0.9
    (50, 44, "proficient"),    # 0.88
    (100, 89, "proficient"),
    (100, 90, "expert"),
])  # fmt: skip
def test_levels_at_and_around_each_threshold(uses: int, successes: int, level: str) -> None:
    assert level_for(uses, successes) == level


def test_thresholds_compare_exactly() -> None:
    # 0.3 * 10 > 3 in binary floating point; 3 of 10 still meets a rule of three tenths.
    rule = MaturityRule(competent=(10, 0.3), proficient=(10, 0.3), expert=(10, 0.3))
    assert level_for(10, 3, rule) == "expert"
    assert level_for(10, 2, rule) == "novice"


def test_custom_rules_and_their_checks() -> None:
    easy = MaturityRule(competent=(1, 0.5), proficient=(2, 0.5), expert=(3, 0.5))
    assert [level_for(n, n, easy) for n in (1, 2, 3)] == ["competent", "proficient", "expert"]
    for bad in ({"competent": (0, 0.6)}, {"competent": (5, 1.1)}, {"proficient": (3, 0.75)},
                {"expert": (50, 0.7)}):  # fmt: skip
        with pytest.raises(ValueError):
            MaturityRule(**bad)


def test_the_fifth_success_makes_a_skill_competent() -> None:
    s = skill()
    levels = []
    for i in range(5):
        s = apply_outcome(s, True, f"2026-02-0{i + 1}T10:00:00Z")
        levels.append(s.maturity.level)
    assert levels == ["novice"] * 4 + ["competent"]
    m = s.maturity
    assert (m.usage_count, m.successes, m.success_rate, m.last_used) == (5, 5, 1.0, "2026-02-05T10:00:00.000Z")


def test_a_failure_can_lower_the_level() -> None:
    s = skill(level="competent", usage_count=5, success_rate=0.6)
    assert s.maturity.successes == 3
    s = apply_outcome(s, False, AT)
    assert (s.maturity.level, s.maturity.usage_count, s.maturity.successes) == ("novice", 6, 3)
    assert s.maturity.success_rate == 0.5


def test_a_stored_level_is_kept_until_the_first_outcome() -> None:
    s = skill(level="expert")  # explicitly trained, never used
    assert s.maturity.level == "expert"
    assert apply_outcome(s, True, AT).maturity.level == "novice"


def test_apply_outcome_leaves_the_rest_and_the_original_alone() -> None:
    s = skill()
    after = apply_outcome(s, True, AT)
    assert after.model_dump(exclude={"maturity"}) == s.model_dump(exclude={"maturity"})
    assert s.maturity.usage_count == 0
    with pytest.raises(KstarRefusal):
        apply_outcome(s, 1, AT)  # type: ignore[arg-type]


@given(st.lists(st.booleans(), max_size=120))
def test_counts_never_drift(outcomes: list[bool]) -> None:
    s = skill()
    for o in outcomes:
        s = apply_outcome(s, o, AT)
    m = s.maturity
    assert (m.usage_count, m.successes) == (len(outcomes), sum(outcomes))
    assert m.success_rate == (sum(outcomes) / len(outcomes) if outcomes else 0.0)
    assert m.level == level_for(len(outcomes), sum(outcomes))
    # the stored form parses back to the same counts
    again = parse_record("skill", s.model_dump(mode="json", by_alias=True), AT)
    assert isinstance(again, Skill) and again.maturity == m
