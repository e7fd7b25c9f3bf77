"""KMMS sufficiency (seed §3.2): minimum depth by signal words, the layer verdict, entity coverage."""

from __future__ import annotations

import math

import pytest

from governance.kmms.sufficiency import (
    DRILL_ORDER,
    TAU,
    LayerVerdict,
    MinDepth,
    covers,
    judge_layer,
    min_depth,
    threshold,
)


@pytest.mark.parametrize(
    ("query", "layer", "reason"),
    [
        ("What did he say exactly?", 4, "verbatim: 'exactly'"),
        ("Quote what John said about DuckDB", 4, "verbatim: 'quote'"),
        ("Give me the verbatim answer", 4, "verbatim: 'verbatim'"),
        ("Repeat it word for word", 4, "verbatim: 'word for word'"),
        ("What were his precise words?", 4, "verbatim: 'precise words'"),
        ("What were her exact words?", 4, "verbatim: 'exact words'"),
        ("What specifically did John object to?", 3, "specificity: 'specifically'"),
        ("Describe the migration in detail", 3, "specificity: 'in detail'"),
        ("What are the details of the plan?", 3, "specificity: 'details'"),
        ("Give me an example of his feedback", 3, "specificity: 'example'"),
        ("When precisely did it break?", 3, "specificity: 'precisely'"),
        ("Tell me about John", 1, "general: 'tell me about'"),
        ("What do you know about DuckDB?", 1, "general: 'what do you know'"),
        ("Give me an overview of the project", 1, "general: 'overview'"),
        ("Summarize my week", 1, "general: 'summarize'"),
        ("Where does John work?", 1, "default: no signal"),
        ("", 1, "default: no signal"),
        # strongest class wins
        ("Tell me about it, exactly as he said", 4, "verbatim: 'exactly'"),
        ("Summarize, with an example", 3, "specificity: 'example'"),
        # whole words only
        ("Who is the quoter of the week?", 1, "default: no signal"),
        ("An exactlyish thing", 1, "default: no signal"),
    ],
)
def test_min_depth(query: str, layer: int, reason: str) -> None:
    assert min_depth(query) == MinDepth(layer, reason)
    floor, why = min_depth(query)  # a plain tuple to callers
    assert (floor, why) == (layer, reason)


def test_drill_order_and_default_tau() -> None:
    assert DRILL_ORDER == (1, 2, 3, 4)
    assert TAU == 0.75


@pytest.mark.parametrize(
    ("args", "verdict"),
    [
        ((1, 0.95, True, 3), LayerVerdict(False, "below minimum depth L3")),
        ((3, 0.95, True, 3), LayerVerdict(True, "sufficient")),
        ((4, 0.95, True, 3), LayerVerdict(True, "sufficient")),
        ((2, 0.62, True, 1), LayerVerdict(False, "best similarity 0.62 < 0.75")),
        ((2, 0.75, True, 1), LayerVerdict(True, "sufficient")),  # >= tau
        ((2, 0.7499, True, 1), LayerVerdict(False, "best similarity 0.75 < 0.75")),  # 2 decimals in the text
        ((2, 0.9, False, 1), LayerVerdict(False, "entities not covered")),
        ((2, None, True, 1), LayerVerdict(False, "no result")),
        ((2, math.nan, True, 1), LayerVerdict(False, "best similarity nan < 0.75")),
        # depth is checked first, then similarity, then coverage
        ((1, 0.1, False, 4), LayerVerdict(False, "below minimum depth L4")),
        ((2, 0.1, False, 1), LayerVerdict(False, "best similarity 0.10 < 0.75")),
    ],
)
def test_judge_layer(args: tuple[int, float | None, bool, int], verdict: LayerVerdict) -> None:
    assert judge_layer(*args) == verdict


def test_judge_layer_names_the_signal_and_custom_tau() -> None:
    floor, why = min_depth("What specifically did he say?")
    v = judge_layer(2, 0.99, True, floor, min_reason=why)
    assert v == LayerVerdict(False, "below minimum depth L3 (specificity: 'specifically')")
    assert judge_layer(1, 0.62, True, 1, tau=0.6) == LayerVerdict(True, "sufficient")
    assert judge_layer(1, 0.62, True, 1, tau=0.65).reason == "best similarity 0.62 < 0.65"


def test_drill_stops_at_first_sufficient_layer() -> None:
    best = {1: (0.70, True), 2: (0.81, False), 3: (0.88, True), 4: (0.93, True)}
    floor, why = min_depth("What did we decide about DuckDB?")
    steps = [(layer, judge_layer(layer, *best[layer], floor, min_reason=why)) for layer in DRILL_ORDER]
    first = next(layer for layer, v in steps if v.sufficient)
    assert first == 3
    assert [v.reason for _, v in steps[:2]] == ["best similarity 0.70 < 0.75", "entities not covered"]


@pytest.mark.parametrize(
    ("query", "known", "result", "expected"),
    [
        (["John", "DuckDB"], ["john", "duckdb", "user"], ["duckdb", "John", "Postgres"], True),
        (["John", "DuckDB"], ["john", "duckdb"], ["John"], False),
        (["John", "Zorblax"], ["john"], ["john"], True),  # unknown in L0: cannot block
        ([], ["john"], [], True),
        (["John"], [], [], True),
    ],
)
def test_covers(query: list[str], known: list[str], result: list[str], expected: bool) -> None:
    assert covers(query, known, result) is expected


@pytest.mark.parametrize("layer", DRILL_ORDER)
def test_a_question_about_the_present_lowers_only_the_facts_threshold(layer: int) -> None:
    assert threshold(layer, 0.75, False, 0.40) == 0.75
    assert threshold(layer, 0.75, True, 0.40) == (0.40 if layer == 2 else 0.75)
    assert threshold(layer, 0.30, True, 0.40) == 0.30  # never above tau


def test_a_current_fact_at_its_threshold_answers_a_question_about_the_present() -> None:
    fact = judge_layer(2, 0.45, True, 1, threshold(2, 0.75, True, 0.40))
    summary = judge_layer(3, 0.45, True, 1, threshold(3, 0.75, True, 0.40))
    past = judge_layer(2, 0.45, True, 1, threshold(2, 0.75, False, 0.40))
    assert fact.sufficient and not summary.sufficient and not past.sufficient
    assert past.reason == "best similarity 0.45 < 0.75"
