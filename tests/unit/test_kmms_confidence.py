"""KMMS answer confidence (seed Table 3): bases, each modifier at/below/above its threshold, clamping,
hedging, and the seed's worked example."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import given

from governance.kmms.confidence import (
    HEDGE_DISCUSSIONS,
    HEDGE_LIMITED,
    HEDGE_UNDERSTAND,
    Confidence,
    NodeSignals,
    evidence_count,
    hedging,
    score,
)

DAY = 86_400_000
NOW = 1_776_254_400_000  # 2026-04-15T12:00Z

# Neutral: no modifier fires (similarity in [0.6, 0.9], 2 sources, verified 10 days ago, strength 1).
NEUTRAL = NodeSignals(layer=2, similarity=0.8, evidence_count=2, last_verified_ms=NOW - 10 * DAY, strength=1.0,
                      superseded=False)  # fmt: skip


def _score(current_query: bool = True, **changes: Any) -> Confidence:
    return score(replace(NEUTRAL, **changes), NOW, current_query)


@pytest.mark.parametrize(
    ("layer", "base", "meaning"),
    [
        (0, 0.30, "I have something on this topic"),
        (1, 0.50, "High-level understanding"),
        (2, 0.75, "Established facts"),
        (3, 0.85, "Based on multiple examples"),
        (4, 0.95, "You specifically said..."),
    ],
)
def test_base_table(layer: int, base: float, meaning: str) -> None:
    c = _score(layer=layer)
    assert (c.value, c.base, c.modifiers, c.layer_meaning) == (base, base, (), meaning)


def test_unknown_layer_is_refused() -> None:
    with pytest.raises(ValueError):
        _score(layer=5)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        # evidence count > 5 distinct sources
        ({"evidence_count": 5}, ()),
        ({"evidence_count": 6}, (("evidence", 0.05),)),
        # similarity > 0.9
        ({"similarity": 0.9}, ()),
        ({"similarity": 0.8999}, ()),
        ({"similarity": 0.9001}, (("high_similarity", 0.05),)),
        # verified < 7 days ago
        ({"last_verified_ms": NOW - 7 * DAY}, ()),
        ({"last_verified_ms": NOW - 7 * DAY - 1}, ()),
        ({"last_verified_ms": NOW - 7 * DAY + 1}, (("recently_verified", 0.05),)),
        ({"last_verified_ms": NOW + DAY}, (("recently_verified", 0.05),)),  # clock skew counts as fresh
        # verified > 30 days ago
        ({"last_verified_ms": NOW - 30 * DAY}, ()),
        ({"last_verified_ms": NOW - 30 * DAY + 1}, ()),
        ({"last_verified_ms": NOW - 30 * DAY - 1}, (("stale", -0.10),)),
        ({"last_verified_ms": None}, ()),  # never verified: neither fresh nor stale
        # similarity < 0.6
        ({"similarity": 0.6}, ()),
        ({"similarity": 0.6001}, ()),
        ({"similarity": 0.5999}, (("weak_match", -0.10),)),
        # strength < 0.3
        ({"strength": 0.3}, ()),
        ({"strength": 0.3001}, ()),
        ({"strength": 0.2999}, (("weak_node", -0.10),)),
        # superseded, on a current query
        ({"superseded": True}, (("superseded", -0.30),)),
    ],
)
def test_each_modifier_threshold_is_strict(changes: dict[str, Any], expected: tuple[tuple[str, float], ...]) -> None:
    c = _score(**changes)
    assert c.modifiers == expected
    assert c.value == round(0.75 + sum(d for _, d in expected), 4)


def test_evidence_counts_distinct_sources() -> None:
    assert evidence_count(["n1", "n2", "n1", "n3", "n4", "n5"]) == 5
    assert evidence_count(f"n{i}" for i in range(6)) == 6
    assert _score(evidence_count=evidence_count(["a", "b", "c", "d", "e", "a"])).modifiers == ()


def test_superseded_only_penalised_on_current_queries() -> None:
    assert _score(current_query=False, superseded=True).modifiers == ()
    assert _score(current_query=True, superseded=True).value == 0.45


def test_newer_evidence_is_the_superseded_penalty_for_a_fact_the_log_still_holds_current() -> None:
    assert _score(current_query=True, newer_evidence=True).modifiers == (("newer_evidence", -0.30),)
    assert _score(current_query=True, newer_evidence=True).value == 0.45
    assert _score(current_query=False, newer_evidence=True).modifiers == ()
    # never both: a superseded node is penalised once, as superseded
    assert _score(current_query=True, superseded=True, newer_evidence=True).modifiers == (("superseded", -0.30),)


def test_modifiers_in_fixed_order_and_summed() -> None:
    c = _score(layer=3, evidence_count=9, similarity=0.95, last_verified_ms=NOW - DAY, strength=0.1, superseded=True)
    assert [n for n, _ in c.modifiers] == [
        "evidence",
        "high_similarity",
        "recently_verified",
        "weak_node",
        "superseded",
    ]
    assert c.value == 0.6  # 0.85 + 0.15 - 0.10 - 0.30
    c = _score(layer=1, similarity=0.3, last_verified_ms=NOW - 90 * DAY)
    assert c.modifiers == (("stale", -0.10), ("weak_match", -0.10))
    assert c.value == 0.3


def test_clamped_to_one_and_zero() -> None:
    top = _score(layer=4, evidence_count=20, similarity=0.99, last_verified_ms=NOW)
    assert (top.value, top.base) == (1.0, 0.95)  # 0.95 + 0.15 = 1.10 -> 1.0
    assert top.hedging_prefix is None
    bottom = _score(layer=0, similarity=0.1, last_verified_ms=NOW - 365 * DAY, strength=0.0, superseded=True)
    assert bottom.value == 0.0  # 0.30 - 0.60 -> 0.0
    assert bottom.hedging_prefix == HEDGE_LIMITED


def test_no_float_noise() -> None:
    # 0.75 - 0.10 - 0.10 - 0.10 in floats is 0.44999999999999996
    assert _score(similarity=0.5, strength=0.1, last_verified_ms=NOW - 40 * DAY).value == 0.45


@pytest.mark.parametrize(
    ("value", "prefix"),
    [
        (1.0, None),
        (0.95, None),
        (0.90, None),
        (0.8999, HEDGE_DISCUSSIONS),
        (0.75, HEDGE_DISCUSSIONS),
        (0.7499, HEDGE_UNDERSTAND),
        (0.50, HEDGE_UNDERSTAND),
        (0.4999, HEDGE_LIMITED),
        (0.0, HEDGE_LIMITED),
    ],
)
def test_hedging_thresholds(value: float, prefix: str | None) -> None:
    assert hedging(value) == prefix


def test_hedging_strings() -> None:
    assert HEDGE_DISCUSSIONS == "Based on our discussions..."
    assert HEDGE_UNDERSTAND == "From what I understand..."
    assert HEDGE_LIMITED == "I have limited information, but..."


def test_seed_worked_example() -> None:
    """ "What does John think about the DuckDB migration?" answered from L3, similarity 0.92, verified 5
    days ago. The seed's text prints 0.90 and "Based on..."; the modifier list is normative, so it is
    0.85 + 0.05 (similarity > 0.9) + 0.05 (verified < 7 days) = 0.95, no hedge."""
    signals = NodeSignals(layer=3, similarity=0.92, evidence_count=3, last_verified_ms=NOW - 5 * DAY, strength=0.8,
                          superseded=False)  # fmt: skip
    c = score(signals, NOW, current_query=True)
    assert c.value == 0.95
    assert c.base == 0.85
    assert c.modifiers == (("high_similarity", 0.05), ("recently_verified", 0.05))
    assert c.hedging_prefix is None
    assert c.layer_meaning == "Based on multiple examples"


@given(
    layer=st.integers(0, 4),
    similarity=st.floats(-1.0, 1.0),
    evidence=st.integers(0, 100),
    verified=st.none() | st.integers(NOW - 400 * DAY, NOW + DAY),
    strength=st.floats(0.0, 1.0),
    superseded=st.booleans(),
    current=st.booleans(),
)
def test_value_always_in_unit_interval(
    layer: int,
    similarity: float,
    evidence: int,
    verified: int | None,
    strength: float,
    superseded: bool,
    current: bool,
) -> None:
    c = score(NodeSignals(layer, similarity, evidence, verified, strength, superseded), NOW, current)
    assert 0.0 <= c.value <= 1.0
    assert c.value == round(c.value, 4)
    assert c.hedging_prefix == hedging(c.value)
