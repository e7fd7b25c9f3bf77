"""KSTAR records (seed 003 §3.2) and domain extensions (§10): parsing, bounds, times, schemas, trace categories."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from governance.kstar.domains import (
    BUILTIN_SCHEMAS,
    EDUCATION,
    EDUCATION_CATEGORIES,
    LEARNER_PROFILE,
    check_trace_categories,
    parse_category,
    parse_schema,
    validate_fact,
)
from governance.kstar.records import (
    KIND_MODELS,
    ControlToken,
    Fact,
    KstarRefusal,
    Perception,
    Skill,
    Trace,
    canonical_doc,
    is_scope,
    iso_to_ms,
    ms_to_iso,
    normalise_time,
    parse_record,
    record_id,
)

AT = "2026-01-31T15:00:01.250Z"  # the broker time of the write
SMITH = "urn:principal:org:ieee:role:teacher:person:smith"


def seed_trace(**outcome: Any) -> dict[str, Any]:
    """The store_trace request of seed §13.4, with an id (the API fills one)."""
    return {
        "id": "trace-xyz-789",
        "situation": {"domain": "education.evaluation", "actor": SMITH, "channel": "web",
                      "now": "2026-01-31T15:00:00Z"},
        "task": {"goal": "Evaluate student submission", "constraints": ["rubric-v2"]},
        "action": {"type": "artifact_evaluation",
                   "parameters": {"artifact_id": "artifact-789", "rubric_id": "rubric-v2"}},
        "result": {"success": True, "outcome": outcome or {"score": 85, "feedback": "Good work on recursion examples"}},
    }  # fmt: skip


def refused(kind: str, doc: Any, code: str = "KSTAR_INVALID_RECORD") -> str:
    with pytest.raises(KstarRefusal) as info:
        parse_record(kind, doc, AT)
    assert info.value.code == code
    return info.value.detail


def trace(doc: dict[str, Any]) -> Trace:
    t = parse_record("trace", doc, AT)
    assert isinstance(t, Trace)
    return t


# ---------------------------------------------------------------------------------------------- time


def test_times_are_utc_fixed_width_to_the_millisecond() -> None:
    assert normalise_time("2026-01-31T10:00:00Z") == "2026-01-31T10:00:00.000Z"
    assert normalise_time("2026-01-31T12:00:00+02:00") == "2026-01-31T10:00:00.000Z"
    assert normalise_time("2026-01-31T10:00:00") == "2026-01-31T10:00:00.000Z"  # no offset: UTC
    assert normalise_time("2026-01-31T10:00:00.123987Z") == "2026-01-31T10:00:00.123Z"  # truncated, not rounded
    assert normalise_time("2026-01-31") == "2026-01-31T00:00:00.000Z"
    # Fixed width keeps string order equal to time order at a second boundary.
    assert normalise_time("2026-01-31T10:00:00Z") < normalise_time("2026-01-31T10:00:00.5Z")


@pytest.mark.parametrize("bad", ["", "yesterday", "2026-02-30T00:00:00Z", "2026-01-31T25:00:00Z", "x" * 65])
def test_bad_times_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="ISO-8601"):
        normalise_time(bad)


def test_epoch_milliseconds_round_trip() -> None:
    assert iso_to_ms("1970-01-01T00:00:01.5Z") == 1500
    assert ms_to_iso(1_769_871_601_250) == AT
    assert iso_to_ms(ms_to_iso(1_769_871_601_250)) == 1_769_871_601_250
    assert iso_to_ms("1969-12-31T23:59:59.999Z") == -1


# ---------------------------------------------------------------------------------------------- traces


def test_the_seed_trace_parses_and_its_timestamp_is_the_write_time() -> None:
    t = trace(seed_trace())
    assert t.timestamp == AT
    assert t.situation.now == "2026-01-31T15:00:00.000Z"
    assert t.result is not None and t.result.outcome == {"score": 85, "feedback": "Good work on recursion examples"}
    doc = canonical_doc(t)
    assert doc["metadata"] == {"mode": None, "tags": [], "linked_traces": []}
    assert doc["result"]["side_effects"] == []
    assert record_id("trace", t) == "trace-xyz-789"
    assert trace(doc) == t  # the stored form parses back to the same record


def test_a_given_timestamp_is_kept_normalised() -> None:
    assert trace({**seed_trace(), "timestamp": "2026-01-30T09:00:00+01:00"}).timestamp == "2026-01-30T08:00:00.000Z"


def test_replaying_the_same_write_fills_the_same_values() -> None:
    assert canonical_doc(trace(seed_trace())) == canonical_doc(trace(seed_trace()))


@pytest.mark.parametrize("part", ["situation", "task", "action"])
def test_a_trace_needs_situation_task_and_action(part: str) -> None:
    doc = seed_trace()
    del doc[part]
    assert refused("trace", doc).startswith(f"{part}: Field required")


def test_result_is_optional_and_outcome_may_be_text() -> None:
    doc = seed_trace()
    del doc["result"]
    assert trace(doc).result is None
    t = trace({**seed_trace(), "result": {"success": False, "outcome": "rubric missing"}})
    assert t.result is not None and t.result.outcome == "rubric missing"


def test_trace_fields_are_checked() -> None:
    doc = seed_trace()
    doc["metadata"] = {"mode": "sleepy"}
    assert refused("trace", doc).startswith("metadata.mode:")
    doc = seed_trace()
    doc["result"]["success"] = 1  # strict JSON types: 1 is not true
    assert refused("trace", doc).startswith("result.success:")
    doc = seed_trace()
    doc["situation"]["mood"] = "calm"
    assert refused("trace", doc).startswith("situation.mood: Extra inputs")
    doc = seed_trace()
    doc["situation"]["domain"] = ""
    assert refused("trace", doc).startswith("situation.domain:")


def test_free_form_objects_hold_bounded_json_only() -> None:
    for bad in ({"x": "a\x00b"}, {"x": 2**53}, {"x": float("nan")}, {"k" * 257: 1}):
        doc = seed_trace()
        doc["situation"]["context"] = bad
        assert refused("trace", doc).startswith("situation.context:")
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(17):
        node["n"] = {}
        node = node["n"]
    doc = seed_trace()
    doc["action"]["parameters"] = deep
    assert "nested deeper than 16" in refused("trace", doc)
    doc = seed_trace()
    doc["situation"]["context"] = {"x": 2**53 - 1, "y": [1.5, None, True]}
    trace(doc)


def test_an_id_is_required_and_long_values_are_never_echoed() -> None:
    doc = seed_trace()
    del doc["id"]
    assert refused("trace", doc) == "id: Field required"
    doc = {**seed_trace(), "id": "secret-" + "z" * 300}
    detail = refused("trace", doc)
    assert detail.startswith("id:") and "zzzz" not in detail


def test_unknown_kinds_and_non_objects() -> None:
    refused("episode", seed_trace(), "KSTAR_UNKNOWN_KIND")
    assert refused("trace", ["not", "an", "object"]) == "record: must be a JSON object"
    assert set(KIND_MODELS) == {"trace", "perception", "fact", "skill", "control_token"}


# ---------------------------------------------------------------------------------------------- perceptions, facts


def perception(**changes: Any) -> dict[str, Any]:
    return {"id": "perc-1", "type": "learning_pattern", "subject": "student-123", "evidence": ["trace-xyz-789"],
            "content": "Learns recursion best from worked visual examples", **changes}  # fmt: skip


@pytest.mark.parametrize("confidence", [0, 0.0, 0.7, 1, 1.0])
def test_perception_confidence_inside_the_unit_interval(confidence: float) -> None:
    p = parse_record("perception", perception(confidence=confidence), AT)
    assert isinstance(p, Perception) and p.confidence == confidence


@pytest.mark.parametrize("confidence", [-0.01, 1.01, float("inf"), True, "0.5"])
def test_perception_confidence_outside_is_refused(confidence: Any) -> None:
    assert refused("perception", perception(confidence=confidence)).startswith("confidence:")


def test_perception_defaults_and_times() -> None:
    p = parse_record("perception", perception(), AT)
    assert isinstance(p, Perception)
    assert (p.confidence, p.created_at, p.updated_at, p.valid_until) == (0.5, AT, AT, None)
    kept = parse_record("perception", perception(created_at="2026-01-01T00:00:00Z", valid_until="2026-06-30"), AT)
    assert isinstance(kept, Perception)
    assert (kept.created_at, kept.updated_at, kept.valid_until) == ("2026-01-01T00:00:00.000Z", AT,
                                                                     "2026-06-30T00:00:00.000Z")  # fmt: skip
    assert refused("perception", perception(content="")).startswith("content:")
    doc = perception()
    del doc["content"]
    assert refused("perception", doc) == "content: Field required"


def fact(**data: Any) -> Fact:
    doc = {"id": "fact-1", "schema": "learner_profile", "source": SMITH,
           "data": data or {"learning_style": "visual", "strengths": ["recursion"]}}  # fmt: skip
    f = parse_record("fact", doc, AT)
    assert isinstance(f, Fact)
    return f


def test_fact_schema_is_stored_under_its_seed_name() -> None:
    f = fact()
    assert f.schema_name == "learner_profile" and f.verified is False
    doc = canonical_doc(f)
    assert doc["schema"] == "learner_profile" and "schema_name" not in doc
    assert parse_record("fact", doc, AT) == f
    assert refused("fact", {"id": "f", "schema": "learner_profile"}) == "data: Field required"
    assert refused("fact", {"id": "f", "schema": "learner_profile", "data": [1]}).startswith("data:")


# ---------------------------------------------------------------------------------------------- skills, tokens


def test_skill_maturity_recovers_successes_from_a_seed_document() -> None:
    doc = {"id": "sk-1", "name": "recursion_feedback", "definition": {"procedure": "see rubric"},
           "maturity": {"level": "competent", "success_rate": 0.8, "usage_count": 10}}  # fmt: skip
    s = parse_record("skill", doc, AT)
    assert isinstance(s, Skill)
    assert (s.maturity.successes, s.maturity.success_rate, s.maturity.level) == (8, 0.8, "competent")
    assert canonical_doc(s)["maturity"]["successes"] == 8
    bad = {"id": "sk-1", "name": "n", "definition": {}, "maturity": {"usage_count": 2, "successes": 3}}
    assert "successes cannot exceed usage_count" in refused("skill", bad)
    assert refused("skill", {"id": "sk-1", "name": "n"}) == "definition: Field required"


def test_token_granted_at_is_filled_and_scope_syntax_checked() -> None:
    doc = {"token_id": "tok-1", "type": "evaluation_authority", "scope": "course:CS101", "granted_by": SMITH,
           "permissions": ["evaluate", "feedback"]}  # fmt: skip
    t = parse_record("control_token", doc, AT)
    assert isinstance(t, ControlToken)
    assert (t.granted_at, t.expires_at, t.revoked, t.delegation_chain) == (AT, None, False, [])
    assert record_id("control_token", t) == "tok-1"
    for scope in ("", "course: CS101", "course:*", "course:CS101/../CS102", "course::x", "course:", "{x}"):
        assert not is_scope(scope)
        assert refused("control_token", {**doc, "scope": scope}).startswith("scope:")
    assert is_scope("*") and is_scope("course:CS101/week1")


# ---------------------------------------------------------------------------------------------- domain schemas


def test_education_schemas_are_named_as_the_seed_queries_them() -> None:
    assert {s.name for s in EDUCATION} == {"learner_profile", "teacher_profile"}
    assert BUILTIN_SCHEMAS["learner_profile"] is LEARNER_PROFILE


def test_a_learner_profile_validates() -> None:
    patterns = {"peak_hours": [9, 20], "session_length_preferred": "45m"}
    validate_fact(LEARNER_PROFILE, fact(learning_style="visual", strengths=["recursion"], growth_areas=["testing"],
                                        study_patterns=patterns))  # fmt: skip
    validate_fact(BUILTIN_SCHEMAS["teacher_profile"], fact(teaching_style="socratic", expertise_areas=["CS101"]))


def test_a_bad_learning_style_is_refused_with_its_path() -> None:
    with pytest.raises(KstarRefusal) as info:
        validate_fact(LEARNER_PROFILE, fact(learning_style="colour"))
    assert info.value.code == "KSTAR_SCHEMA_VIOLATION"
    # The path and the rule, never the value refused.
    assert info.value.detail.startswith('data.learning_style: breaks the schema\'s enum rule (["visual"')
    assert "colour" not in info.value.detail
    with pytest.raises(KstarRefusal) as info:
        validate_fact(LEARNER_PROFILE, fact(strengths=["recursion", 7]))
    assert info.value.detail == 'data.strengths[1]: breaks the schema\'s type rule ("string")'


def test_a_fact_of_an_unknown_schema_is_refused() -> None:
    with pytest.raises(KstarRefusal) as info:
        validate_fact(None, fact())
    assert info.value.code == "KSTAR_UNKNOWN_SCHEMA" and "learner_profile" not in info.value.detail  # not echoed


def test_user_schemas_must_be_json_schemas() -> None:
    doc = {"type": "object", "properties": {"grade": {"type": "integer", "minimum": 0, "maximum": 100}},
           "required": ["grade"]}  # fmt: skip
    s = parse_schema("gradebook_entry", doc)
    assert s.version.startswith("sha256:") and s.version == parse_schema("gradebook_entry", copy.deepcopy(doc)).version
    assert parse_schema("gradebook_entry", doc, version="2").version == "2"
    validate_fact(s, fact(grade=100))
    with pytest.raises(KstarRefusal) as info:
        validate_fact(s, fact(grade=101))
    assert (info.value.code, info.value.detail) == ("KSTAR_SCHEMA_VIOLATION",
                                                    "data.grade: breaks the schema's maximum rule (100)")  # fmt: skip
    for bad in ({"type": "nope"}, {"properties": {"a": {"type": 5}}}, {"pattern": "("}, [1]):
        with pytest.raises(KstarRefusal) as info:
            parse_schema("broken", bad)  # type: ignore[arg-type]
        assert info.value.code == "KSTAR_INVALID_SCHEMA"
    with pytest.raises(KstarRefusal) as info:
        parse_schema("has space", {})
    assert info.value.code == "KSTAR_INVALID_SCHEMA"


def test_a_schema_with_a_remote_ref_is_never_fetched() -> None:
    s = parse_schema("remote", {"$ref": "https://example.invalid/schema.json"})
    with pytest.raises(KstarRefusal) as info:
        validate_fact(s, fact())
    assert info.value.code == "KSTAR_INVALID_SCHEMA"


# ---------------------------------------------------------------------------------------------- trace categories


def category_refusal(doc: dict[str, Any]) -> str:
    with pytest.raises(KstarRefusal) as info:
        check_trace_categories(EDUCATION_CATEGORIES, trace(doc))
    assert info.value.code == "KSTAR_CATEGORY_FIELD_MISSING"
    return info.value.detail


def test_x24_scores_in_the_outcome_satisfies_artifact_evaluation() -> None:
    check_trace_categories(EDUCATION_CATEGORIES, trace(seed_trace(scores={"recursion": 85}, feedback="Good work")))


def test_x24_the_seed_example_with_score_misses_scores() -> None:
    detail = category_refusal(seed_trace())  # §13.4 says "score"; §10.2's category says "scores"
    assert "'artifact_evaluation'" in detail and "needs scores in" in detail


def test_required_fields_may_sit_in_parameters_or_outcome_only_as_keys() -> None:
    doc = seed_trace()
    doc["action"]["parameters"]["scores"] = [85]
    del doc["result"]
    check_trace_categories(EDUCATION_CATEGORIES, trace(doc))
    doc = seed_trace()
    doc["result"]["outcome"] = "scores: 85"  # a text outcome has no keys
    del doc["action"]["parameters"]["rubric_id"]
    assert "needs rubric_id, scores in" in category_refusal(doc)


def test_categories_apply_to_their_domain_only() -> None:
    doc = seed_trace()
    doc["situation"]["domain"] = "education.curriculum"
    assert "'module_authoring'" in category_refusal(doc)
    doc["action"]["parameters"] = {"module_id": "m-1", "learning_objectives": ["recursion"]}
    check_trace_categories(EDUCATION_CATEGORIES, trace(doc))
    doc["situation"]["domain"] = "education.chat"
    doc["action"]["parameters"] = {}
    check_trace_categories(EDUCATION_CATEGORIES, trace(doc))


def test_parse_category() -> None:
    c = parse_category({"name": "artifact_evaluation", "domain": "education.evaluation",
                        "required_fields": ["artifact_id", "rubric_id", "scores", "scores"]})  # fmt: skip
    assert c == EDUCATION_CATEGORIES[0]
    for bad in ({"name": "x"}, {"name": "x", "domain": "d", "required_fields": "scores"}, {"name": "", "domain": "d"}):
        with pytest.raises(KstarRefusal) as info:
            parse_category(bad)
        assert info.value.code == "KSTAR_INVALID_RECORD"
