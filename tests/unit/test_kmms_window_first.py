"""A time window's rounds and the rest of time's (projections.kmms.rerank.window_first): the window first,
unless a round outside it is clearly closer to the question than anything in it."""

from __future__ import annotations

from projections.kmms.rerank import window_first
from projections.kmms.search import UnitHit


def _u(unit: str, voiced: float) -> UnitHit:
    return UnitHit(unit, unit.split("#")[0], unit.split("#")[0], "", unit, 0, 0, 0.01, voiced, voiced)


def test_the_window_comes_first_when_nothing_outside_it_is_clearly_closer() -> None:
    window = [_u("june#0", 0.50), _u("june2#0", 0.30)]
    rest = [_u("may#0", 0.55), _u("june#0", 0.50), _u("april#0", 0.20)]
    assert [u.unit_id for u in window_first(window, rest, 0.10)] == ["june#0", "june2#0", "may#0", "april#0"]


def test_a_round_outside_the_window_clearly_closer_comes_before_it() -> None:
    window = [_u("june#0", 0.30), _u("june2#0", 0.25)]
    rest = [_u("april#0", 0.55), _u("may#0", 0.35), _u("march#0", 0.40)]
    out = window_first(window, rest, 0.10)
    assert [u.unit_id for u in out] == ["april#0", "march#0", "june#0", "june2#0", "may#0"]
    above = window_first(window, [_u("may#0", 0.45)], 0.10)
    assert [u.unit_id for u in above] == ["may#0", "june#0", "june2#0"]


def test_an_empty_window_or_the_rule_off_keeps_the_plain_order() -> None:
    rest = [_u("april#0", 0.55), _u("may#0", 0.35)]
    assert [u.unit_id for u in window_first([], rest, 0.10)] == ["april#0", "may#0"]
    window = [_u("june#0", 0.10)]
    assert [u.unit_id for u in window_first(window, rest, 2.0)] == ["june#0", "april#0", "may#0"]
