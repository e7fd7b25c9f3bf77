"""A time window's rounds and the rest of time's: fused, the window's ranking a reciprocal-rank list of its own
(governance.kmms.ranking.window_fused, the default); or the window first (window_first,
``HIVEMEM_KMMS_WINDOW_WEIGHT=0``)."""

from __future__ import annotations

from governance.kmms.ranking import window_first, window_fused
from projections.kmms.search import UnitHit


def _u(unit: str, similarity: float) -> UnitHit:
    return UnitHit(unit, unit.split("#")[0], unit.split("#")[0], "", unit, 0, 0, 0.01, similarity)


def test_the_window_comes_first_then_the_rest_of_time_each_once() -> None:
    window = [_u("june#0", 0.30), _u("june2#0", 0.25)]
    rest = [_u("april#0", 0.55), _u("june#0", 0.30), _u("may#0", 0.35)]
    assert [u.unit_id for u in window_first(window, rest)] == ["june#0", "june2#0", "april#0", "may#0"]
    assert [u.unit_id for u in window_first([], rest[:1])] == ["april#0"]


def test_fused_a_round_of_the_window_gains_and_one_outside_it_passes_its_weak_rounds() -> None:
    # All time's ranking holds the window's rounds too. k = 10, the window's list of weight 2.
    window = [_u("june#0", 0.30), _u("june2#0", 0.25)]
    rest = [_u("april#0", 0.55), _u("june#0", 0.30), _u("may#0", 0.28), _u("june2#0", 0.25)]
    out = window_fused(window, rest, 2.0, 10)
    # june#0: 1/12 + 2/11; june2#0: 1/14 + 2/12; april#0: 1/11; may#0: 1/13.
    assert [u.unit_id for u in out] == ["june#0", "june2#0", "april#0", "may#0"]
    assert [round(u.fused, 6) for u in out] == [round(1 / 12 + 2 / 11, 6), round(1 / 14 + 2 / 12, 6),
                                                round(1 / 11, 6), round(1 / 13, 6)]  # fmt: skip
    # The window's first round leads (2/11 against at most 1/11), but a round far down the window's ranking and all
    # time's comes after the first rounds outside it: the window's 20th (2/30 + 1/50) after all time's first (1/11).
    window = [_u(f"june{i}#0", 0.3 - i / 100) for i in range(20)]
    out = window_fused(window, [_u("april#0", 0.6), *(_u(f"old{i}#0", 0.5) for i in range(19)), *window], 2.0, 10)
    ids = [u.unit_id for u in out]
    assert ids[0] == "june0#0" and ids.index("april#0") < ids.index("june19#0")


def test_fused_with_no_window_keeps_all_times_order() -> None:
    rest = [_u("april#0", 0.55), _u("may#0", 0.35)]
    assert [u.unit_id for u in window_fused([], rest, 2.0, 10)] == ["april#0", "may#0"]
