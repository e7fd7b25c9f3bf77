"""KSTAR query filters (seed 003 §8): parsing, the evaluator, JSONPath and ordering."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import given

from governance.kstar.filters import (
    Condition,
    json_equal,
    matches,
    parse_filters,
    parse_jsonpath,
    parse_order,
    roots_of,
)
from governance.kstar.records import Fact, KstarRefusal, Perception, Trace, format_time

TRACE_ROOTS = roots_of(Trace)
TRACE = {
    "id": "trace-xyz-789",
    "timestamp": "2026-01-31T15:00:01.250Z",
    "situation": {"domain": "education.evaluation", "actor": "urn:principal:org:ieee:role:teacher:person:smith"},
    "action": {"type": "artifact_evaluation", "parameters": {"artifact_id": "artifact-789"}},
    "result": {"success": True, "outcome": {"score": 85, "feedback": "Good work"}, "side_effects": []},
    "metadata": {"mode": None, "tags": ["rubric-v2", "cs101"], "linked_traces": []},
}


def hit(filters: dict[str, Any], doc: dict[str, Any] = TRACE) -> bool:
    return matches(doc, parse_filters(filters, TRACE_ROOTS))


def bad(filters: Any, roots: frozenset[str] = TRACE_ROOTS) -> str:
    with pytest.raises(KstarRefusal) as info:
        parse_filters(filters, roots)
    assert info.value.code == "KSTAR_BAD_FILTER"
    return info.value.detail


def test_roots_are_the_stored_field_names() -> None:
    assert {"id", "timestamp", "situation", "task", "action", "result", "metadata"} == TRACE_ROOTS
    assert "schema" in roots_of(Fact) and "schema_name" not in roots_of(Fact)
    assert "confidence" in roots_of(Perception)


def test_the_seeds_examples() -> None:
    assert hit({"situation.domain": "education.evaluation"})
    assert hit({"result.success": True, "action.type": "artifact_evaluation"})
    assert not hit({"result.success": False, "action.type": "artifact_evaluation"})
    assert hit({"timestamp": {"gte": "2026-01-01", "lte": "2026-01-31"}})  # all of January, the 31st included
    assert not hit({"timestamp": {"gte": "2026-02-01"}})


def test_parsed_conditions() -> None:
    conds = parse_filters({"timestamp": {"gte": "2026-01-01", "lte": "2026-01-31"}, "result.success": True},
                          TRACE_ROOTS)  # fmt: skip
    assert conds == [
        Condition(("timestamp",), "gte", "2026-01-01T00:00:00.000Z"),
        Condition(("timestamp",), "lte", "2026-01-31T23:59:59.999Z"),
        Condition(("result", "success"), "eq", True),
    ]
    gt, lt = parse_filters({"timestamp": {"gt": "2026-01-31", "lt": "2026-01-31T17:00:00+02:00"}}, TRACE_ROOTS)
    assert (gt.value, lt.value) == ("2026-01-31T23:59:59.999Z", "2026-01-31T15:00:00.000Z")


def test_time_bounds_at_the_millisecond() -> None:
    assert hit({"timestamp": {"gte": "2026-01-31T15:00:01.250Z", "lte": "2026-01-31T16:00:01.250+01:00"}})
    assert not hit({"timestamp": {"gt": "2026-01-31T15:00:01.250Z"}})
    assert not hit({"timestamp": {"lt": "2026-01-31T15:00:01.250Z"}})
    assert hit({"timestamp": {"gt": "2026-01-31T15:00:01Z"}})  # .250 is after :01, fixed width or not
    assert not hit({"timestamp": {"gt": "2026-01-31"}})


def test_numbers_and_types() -> None:
    assert hit({"result.outcome.score": {"gte": 85, "lt": 85.5}})
    assert not hit({"result.outcome.score": {"gt": 85}})
    assert not hit({"result.outcome.score": {"gte": "80"}})  # a string never compares with a number
    assert not hit({"result.outcome.feedback": {"gte": 0}})
    assert hit({"result.outcome.score": 85.0})  # 85 is 85.0 in JSON
    assert not hit({"result.success": 1})  # but true is not 1
    assert not json_equal(True, 1) and not json_equal(0, False) and json_equal({"a": [1]}, {"a": [1.0]})
    assert not json_equal({"a": 1}, {"a": 1, "b": 2}) and not json_equal([1], [1, 2]) and not json_equal("1", 1)


def test_in_contains_null_and_missing() -> None:
    assert hit({"action.type": {"in": ["module_authoring", "artifact_evaluation"]}})
    assert not hit({"action.type": {"in": ["module_authoring"]}})
    assert hit({"metadata.tags": {"contains": "cs101"}})
    assert not hit({"metadata.tags": {"contains": "cs"}})  # elements, not substrings
    assert not hit({"situation.domain": {"contains": "education"}})  # not an array
    assert hit({"metadata.mode": None})
    assert not hit({"task.goal": None})  # missing is not null
    assert not hit({"task": {"gte": ""}})
    assert hit({"result.outcome": {"score": 85, "feedback": "Good work"}})  # a dict without operators: equality
    assert hit({"metadata.linked_traces": []}) and hit({})


@pytest.mark.parametrize("key", ["situation..domain", "situation.1domain", "situation.do-main", "Timestamp",
                                 "secret", "result.b.c.d.e.f.g.h.i", "", ".result"])  # fmt: skip
def test_bad_paths_are_refused(key: str) -> None:
    bad({key: 1})


def test_bad_values_are_refused() -> None:
    assert "mixes operators" in bad({"timestamp": {"gte": "2026-01-01", "gtee": "2026-01-31"}})
    values: list[Any] = [{"in": []}, {"in": "x"}, {"in": [{"a": 1}]}, {"in": [None]}, {"contains": ["x"]},
              {"gte": True}, {"gte": None}, {"lte": [1]}, {"gte": "2026-13-01"}, "a\x00b"]  # fmt: skip
    for value in values:
        bad({"timestamp": value})
    assert "at most 16" in bad({f"situation.f{i}": {"gte": 0, "lte": 1} for i in range(9)})
    assert bad(["situation.domain"]) == "filters must be an object"
    assert len(parse_filters({f"situation.f{i}": {"gte": 0, "lte": 1} for i in range(8)}, TRACE_ROOTS)) == 16
    assert len(parse_filters({"result." + ".".join(["x"] * 7): 1}, TRACE_ROOTS)[0].path) == 8


def test_jsonpath_subset() -> None:
    assert parse_jsonpath("$.learning_style") == ("learning_style",)
    assert parse_jsonpath("$.study_patterns.session_length_preferred") == ("study_patterns", "session_length_preferred")
    for path in ("$", "learning_style", "$.a[0]", "$..a", "$.a.", "$['a']", "$.1a", "$." + ".".join("a" * 9)):
        with pytest.raises(KstarRefusal) as info:
            parse_jsonpath(path)
        assert info.value.code == "KSTAR_BAD_JSONPATH"
    fact = {"schema": "learner_profile", "data": {"learning_style": "visual"}}
    assert matches(fact, [Condition(("data", *parse_jsonpath("$.learning_style")), "eq", "visual")])


def test_order_by() -> None:
    allowed = frozenset({"confidence", "updated_at"})
    assert parse_order("-confidence", allowed) == ("confidence", True)
    assert parse_order("confidence", allowed) == ("confidence", False)
    assert parse_order("+updated_at", allowed) == ("updated_at", False)
    for order in ("-content", "", "-", "--confidence"):
        with pytest.raises(KstarRefusal) as info:
            parse_order(order, allowed)
        assert info.value.code == "KSTAR_BAD_FILTER"


_TIMES = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC))


@given(_TIMES, _TIMES, st.integers(-720, 840))
def test_normalised_time_strings_order_as_times(stored: datetime, bound: datetime, offset_min: int) -> None:
    stored = stored.replace(microsecond=stored.microsecond // 1000 * 1000)  # stored to the millisecond
    bound = bound.replace(microsecond=bound.microsecond // 1000 * 1000)
    doc = {"timestamp": format_time(stored)}
    # the bound as the caller may write it: in another offset
    written = bound.astimezone(timezone(timedelta(minutes=offset_min)))
    wanted = {"gte": stored >= bound, "lte": stored <= bound, "gt": stored > bound, "lt": stored < bound}
    for op, want in wanted.items():
        assert hit({"timestamp": {op: written.isoformat()}}, doc) == want
