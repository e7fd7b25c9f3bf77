"""Skill maturity (seed 003 §3.2.3, X-23): the level follows usage count and success rate.

A level needs both its minimum uses and its minimum success rate (``successes / usage_count``); the highest
level met wins, otherwise ``novice``. Rates compare exactly (as fractions), so 3 of 5 is exactly 0.6. The level
is recomputed on every outcome, so it can fall as well as rise; a level given when the skill is stored is kept
until its first outcome.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise

from governance.kstar.records import KstarRefusal, Level, Maturity, Skill, normalise_time


@dataclass(frozen=True)
class MaturityRule:
    """(minimum uses, minimum success rate) per level."""

    competent: tuple[int, float] = (5, 0.6)
    proficient: tuple[int, float] = (20, 0.75)
    expert: tuple[int, float] = (50, 0.9)

    def __post_init__(self) -> None:
        steps = (self.competent, self.proficient, self.expert)
        if any(n < 1 or not 0.0 <= r <= 1.0 for n, r in steps):
            raise ValueError("each level needs at least 1 use and a rate in [0, 1]")
        if any(a[0] > b[0] or a[1] > b[1] for a, b in pairwise(steps)):
            raise ValueError("levels must not get easier as they rise")


DEFAULT_RULE = MaturityRule()


def level_for(usage_count: int, successes: int, rule: MaturityRule = DEFAULT_RULE) -> Level:
    if usage_count <= 0:
        return "novice"
    rate = Fraction(max(0, min(successes, usage_count)), usage_count)
    # Fraction(repr(x)) is the decimal the rule was written with (0.6 -> 3/5), not its binary approximation.
    steps: tuple[tuple[Level, tuple[int, float]], ...] = (
        ("expert", rule.expert), ("proficient", rule.proficient), ("competent", rule.competent),
    )  # fmt: skip
    for level, (uses, min_rate) in steps:
        if usage_count >= uses and rate >= Fraction(repr(min_rate)):
            return level
    return "novice"


def apply_outcome(skill: Skill, outcome: bool, at_iso: str, rule: MaturityRule = DEFAULT_RULE) -> Skill:
    """The skill after one more use: count, successes, rate, ``last_used`` and level updated."""
    if not isinstance(outcome, bool):
        raise KstarRefusal("KSTAR_INVALID_RECORD", "outcome: true or false")
    m = skill.maturity
    count = m.usage_count + 1
    successes = (m.successes or 0) + int(outcome)
    maturity = Maturity(
        level=level_for(count, successes, rule),
        success_rate=successes / count,
        last_used=normalise_time(at_iso),
        usage_count=count,
        successes=successes,
    )
    return skill.model_copy(update={"maturity": maturity})
