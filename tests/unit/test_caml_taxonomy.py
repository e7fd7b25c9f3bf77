"""CAML taxonomy: kinds and aliases, domains, Table-4 gates at their boundaries, typed patterns."""

from __future__ import annotations

import json
from typing import Any

import pytest

from governance.caml.taxonomy import (
    ALIASES,
    DAY_MS,
    DOMAINS,
    KINDS,
    PATTERN_MODELS,
    TYPE_RULES,
    ObservationKind,
    Refusal,
    canonical_kind,
    is_over_age,
    max_age_ms,
    observation_refusal,
    parse_pattern,
)

# One valid pattern per kind; the schema tests mutate these.
VALID: dict[ObservationKind, dict[str, Any]] = {
    "WORKFLOW_PATTERN": {"steps": ["triage", "refund"], "avg_resolution_turns": 3.5, "success_rate": 0.9,
                         "failure_modes": ["timeout"], "prerequisites": []},
    "EFFICIENCY_DELTA": {"metric": "turns", "baseline_value": 8, "improved_value": 5.5, "method": "template",
                         "conditions": ["en"]},
    "ANOMALY_DETECTED": {"signal": "latency", "baseline": 120.0, "observed": "spiky", "window": "1h"},
    "DOMAIN_SIGNAL": {"trend": "more disputes", "direction": "emerging", "magnitude": 0.3, "window": "7d"},
    "REGULATORY_SHIFT": {"jurisdiction": "EU", "rule": "AI Act art. 50", "effective_date": "2026-08-02",
                         "impact": "label synthetic content"},
    "CONSENSUS_SIGNAL": {"source_observation_id": "obs-1", "validations": 3, "refutations": 0},
}  # fmt: skip

TABLE4 = {  # kind: (min reputation, max age days, min evidence)
    "ANOMALY_DETECTED": (0, 30, 3),
    "DOMAIN_SIGNAL": (10, 60, 5),
    "WORKFLOW_PATTERN": (20, 90, 10),
    "EFFICIENCY_DELTA": (20, 120, 5),
    "REGULATORY_SHIFT": (40, 365, 1),
}
CLIENT_KINDS = tuple(TABLE4)


def refs(n: int) -> list[str]:
    return [f"sha256:{i:064x}" for i in range(n)]


def refusal(kind: ObservationKind, rep: float, ev: list[str], pattern: Any = None, **kw: bool) -> Refusal | None:
    body = (
        pattern if isinstance(pattern, str) else json.dumps(VALID[canonical_kind(kind)] if pattern is None else pattern)
    )
    return observation_refusal(kind, rep, ev, body, **kw)


def code(r: Refusal | None) -> str | None:
    return None if r is None else r.code


# --- kinds, aliases, domains, table -----------------------------------------------------------------


def test_six_kinds_and_their_aliases() -> None:
    assert set(KINDS) == set(TYPE_RULES) == set(PATTERN_MODELS) == {*TABLE4, "CONSENSUS_SIGNAL"}
    assert ALIASES == {"ANOMALY": "ANOMALY_DETECTED", "DOMAIN": "DOMAIN_SIGNAL", "WORKFLOW": "WORKFLOW_PATTERN",
                       "EFFICIENCY": "EFFICIENCY_DELTA", "REGULATORY": "REGULATORY_SHIFT",
                       "CONSENSUS": "CONSENSUS_SIGNAL"}  # fmt: skip
    for k in KINDS:
        assert canonical_kind(k) == k
    for short, k in ALIASES.items():
        assert canonical_kind(short) == k
        assert max_age_ms(short) == max_age_ms(k)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["anomaly", "Anomaly_Detected", "", "ANOMALY ", "OTHER", "x" * 5000])
def test_unknown_kind_is_a_value_error(bad: str) -> None:
    with pytest.raises(ValueError) as e:
        canonical_kind(bad)
    assert len(str(e.value)) < 200  # never echoes a long name


def test_fourteen_domains() -> None:
    assert DOMAINS == (
        "legal", "finance", "procurement", "hr", "customer_support", "logistics", "manufacturing",
        "healthcare", "real_estate", "education", "government", "retail", "technology", "general",
    )  # fmt: skip
    assert len(set(DOMAINS)) == 14


def test_table4_rules() -> None:
    for kind, (rep, days, ev) in TABLE4.items():
        rule = TYPE_RULES[kind]  # type: ignore[index]
        assert (rule.min_reputation, rule.max_age_days, rule.min_evidence, rule.system_only) == (rep, days, ev, False)
    consensus = TYPE_RULES["CONSENSUS_SIGNAL"]
    assert (consensus.min_reputation, consensus.max_age_days, consensus.system_only) == (None, 180, True)


# --- gates at their boundaries ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", CLIENT_KINDS)
def test_reputation_gate_boundary(kind: ObservationKind) -> None:
    rep, _, ev = TABLE4[kind]
    assert refusal(kind, rep, refs(ev)) is None
    assert refusal(kind, 100, refs(ev)) is None
    if rep > 0:
        assert code(refusal(kind, rep - 0.001, refs(ev))) == "REPUTATION_TOO_LOW"
        assert code(refusal(kind, rep - 1, refs(ev))) == "REPUTATION_TOO_LOW"


@pytest.mark.parametrize("kind", CLIENT_KINDS)
@pytest.mark.parametrize("rep", [float("nan"), float("-inf")])
def test_non_finite_reputation_is_too_low(kind: ObservationKind, rep: float) -> None:
    assert code(refusal(kind, rep, refs(TABLE4[kind][2]))) == "REPUTATION_TOO_LOW"


@pytest.mark.parametrize("kind", CLIENT_KINDS)
def test_evidence_gate_boundary(kind: ObservationKind) -> None:
    rep, _, ev = TABLE4[kind]
    assert refusal(kind, rep, refs(ev)) is None
    r = refusal(kind, rep, refs(ev - 1))
    assert r is not None and r.code == "INSUFFICIENT_EVIDENCE" and str(ev) in r.detail


@pytest.mark.parametrize("kind", CLIENT_KINDS)
def test_age_boundary(kind: ObservationKind) -> None:
    days = TABLE4[kind][1]
    created = 1_700_000_000_000
    assert max_age_ms(kind) == days * DAY_MS
    assert not is_over_age(kind, created, created + days * DAY_MS)
    assert is_over_age(kind, created, created + days * DAY_MS + 1)
    assert not is_over_age(kind, created, created)


def test_consensus_age_is_180_days() -> None:
    assert not is_over_age("CONSENSUS", 0, 180 * DAY_MS)  # type: ignore[arg-type]  # an alias works too
    assert is_over_age("CONSENSUS_SIGNAL", 0, 180 * DAY_MS + 1)


@pytest.mark.parametrize(
    "ev",
    [
        ["has space", "b", "c"],
        ["tab\there", "b", "c"],
        ["", "b", "c"],
        ["x" * 257, "b", "c"],
        ["a", "a", "b"],  # a repeated ref would pad the count
        ["a", 7, "c"],
        ["a", "b", "c\x00"],
        [f"r{i}" for i in range(65)],
    ],
)
def test_malformed_evidence(ev: list[Any]) -> None:
    r = refusal("ANOMALY_DETECTED", 0, ev)
    assert r is not None and r.code == "INSUFFICIENT_EVIDENCE"
    assert len(r.detail) < 200


def test_evidence_ref_of_256_chars_is_fine() -> None:
    assert refusal("ANOMALY_DETECTED", 0, ["x" * 256, "b", "c"]) is None
    assert refusal("ANOMALY_DETECTED", 0, [f"r{i}" for i in range(64)]) is None


def test_evidence_must_be_a_list_not_a_string() -> None:
    assert code(refusal("REGULATORY_SHIFT", 40, "abc")) == "INSUFFICIENT_EVIDENCE"  # type: ignore[arg-type]


def test_consensus_signal_is_system_only() -> None:
    assert code(refusal("CONSENSUS_SIGNAL", 100, refs(20))) == "SYSTEM_ONLY_TYPE"
    assert code(refusal("CONSENSUS", 100, refs(20))) == "SYSTEM_ONLY_TYPE"  # type: ignore[arg-type]
    assert refusal("CONSENSUS_SIGNAL", 0, [], system=True) is None
    assert code(refusal("CONSENSUS_SIGNAL", 0, [], {"source_observation_id": "o"}, system=True)) == "INVALID_PATTERN"


def test_system_flag_does_not_lift_other_gates() -> None:
    assert code(refusal("REGULATORY_SHIFT", 39, refs(1), system=True)) == "REPUTATION_TOO_LOW"


def test_gate_order() -> None:
    # Everything wrong: the first gate in the documented order wins.
    assert code(refusal("CONSENSUS_SIGNAL", -1, ["bad ref"], "nope")) == "SYSTEM_ONLY_TYPE"
    assert code(refusal("WORKFLOW_PATTERN", 19, ["bad ref"], "nope")) == "REPUTATION_TOO_LOW"
    assert code(refusal("WORKFLOW_PATTERN", 20, refs(9), "nope")) == "INSUFFICIENT_EVIDENCE"
    assert code(refusal("WORKFLOW_PATTERN", 20, refs(10), "nope")) == "INVALID_PATTERN"


def test_aliases_pass_the_gates() -> None:
    assert refusal("WORKFLOW", 20, refs(10), VALID["WORKFLOW_PATTERN"]) is None  # type: ignore[arg-type]


# --- patterns -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_valid_patterns_parse(kind: ObservationKind) -> None:
    m = parse_pattern(kind, json.dumps(VALID[kind]))
    assert isinstance(m, PATTERN_MODELS[kind])


@pytest.mark.parametrize("kind", KINDS)
def test_extra_key_refused(kind: ObservationKind) -> None:
    r = refusal(kind, 100, refs(10), {**VALID[kind], "surprise": 1}, system=True)
    assert r is not None and r.code == "INVALID_PATTERN" and "surprise" in r.detail


@pytest.mark.parametrize("kind", KINDS)
def test_each_missing_required_field_refused(kind: ObservationKind) -> None:
    optional = {"magnitude"}
    for name in VALID[kind]:
        body = {k: v for k, v in VALID[kind].items() if k != name}
        r = refusal(kind, 100, refs(10), body, system=True)
        if name in optional:
            assert r is None
        else:
            assert r is not None and r.code == "INVALID_PATTERN" and name in r.detail, name


WRONG_TYPES: list[tuple[ObservationKind, str, Any]] = [
    ("WORKFLOW_PATTERN", "steps", []),
    ("WORKFLOW_PATTERN", "steps", "triage"),
    ("WORKFLOW_PATTERN", "steps", [1]),
    ("WORKFLOW_PATTERN", "avg_resolution_turns", -0.5),
    ("WORKFLOW_PATTERN", "avg_resolution_turns", "3"),
    ("WORKFLOW_PATTERN", "success_rate", 1.01),
    ("WORKFLOW_PATTERN", "success_rate", -0.01),
    ("WORKFLOW_PATTERN", "success_rate", True),
    ("WORKFLOW_PATTERN", "failure_modes", None),
    ("WORKFLOW_PATTERN", "prerequisites", [""]),
    ("EFFICIENCY_DELTA", "metric", 5),
    ("EFFICIENCY_DELTA", "baseline_value", "8"),
    ("EFFICIENCY_DELTA", "improved_value", None),
    ("EFFICIENCY_DELTA", "method", ""),
    ("EFFICIENCY_DELTA", "conditions", [1]),
    ("ANOMALY_DETECTED", "signal", ["latency"]),
    ("ANOMALY_DETECTED", "baseline", False),
    ("ANOMALY_DETECTED", "observed", {"v": 1}),
    ("ANOMALY_DETECTED", "window", 3600),
    ("DOMAIN_SIGNAL", "trend", None),
    ("DOMAIN_SIGNAL", "direction", "sideways"),
    ("DOMAIN_SIGNAL", "direction", "UP"),
    ("DOMAIN_SIGNAL", "magnitude", "big"),
    ("REGULATORY_SHIFT", "effective_date", "2026-02-30"),
    ("REGULATORY_SHIFT", "effective_date", "20260802"),
    ("REGULATORY_SHIFT", "effective_date", "2026-08-02T00:00:00"),
    ("REGULATORY_SHIFT", "effective_date", 20260802),
    ("REGULATORY_SHIFT", "jurisdiction", 1),
    ("CONSENSUS_SIGNAL", "validations", 3.0),
    ("CONSENSUS_SIGNAL", "validations", -1),
    ("CONSENSUS_SIGNAL", "refutations", True),
    ("CONSENSUS_SIGNAL", "source_observation_id", "x" * 257),
]


@pytest.mark.parametrize(("kind", "name", "value"), WRONG_TYPES)
def test_wrong_type_refused(kind: ObservationKind, name: str, value: Any) -> None:
    r = refusal(kind, 100, refs(10), {**VALID[kind], name: value}, system=True)
    assert r is not None and r.code == "INVALID_PATTERN" and name in r.detail


RIGHT_VARIANTS: list[tuple[ObservationKind, str, Any]] = [
    ("WORKFLOW_PATTERN", "avg_resolution_turns", 0),
    ("WORKFLOW_PATTERN", "success_rate", 0),
    ("WORKFLOW_PATTERN", "success_rate", 1),
    ("WORKFLOW_PATTERN", "steps", ["s"] * 64),
    ("EFFICIENCY_DELTA", "conditions", "only on weekdays"),
    ("EFFICIENCY_DELTA", "conditions", []),
    ("ANOMALY_DETECTED", "baseline", 3),
    ("ANOMALY_DETECTED", "observed", "x" * 1024),
    ("DOMAIN_SIGNAL", "magnitude", None),
    ("DOMAIN_SIGNAL", "direction", "down"),
    ("REGULATORY_SHIFT", "effective_date", "2028-02-29"),
]


@pytest.mark.parametrize(("kind", "name", "value"), RIGHT_VARIANTS)
def test_allowed_variants(kind: ObservationKind, name: str, value: Any) -> None:
    assert refusal(kind, 100, refs(10), {**VALID[kind], name: value}, system=True) is None


@pytest.mark.parametrize("kind", ["WORKFLOW_PATTERN", "EFFICIENCY_DELTA"])
def test_bounds_on_strings_and_lists(kind: ObservationKind) -> None:
    name = "failure_modes" if kind == "WORKFLOW_PATTERN" else "conditions"
    assert code(refusal(kind, 100, refs(10), {**VALID[kind], name: ["s"] * 65})) == "INVALID_PATTERN"
    assert code(refusal(kind, 100, refs(10), {**VALID[kind], name: ["s" * 1025]})) == "INVALID_PATTERN"
    assert refusal(kind, 100, refs(10), {**VALID[kind], name: ["s" * 1024] * 64}) is None


@pytest.mark.parametrize(
    "body",
    ["", "not json", "[1, 2]", '"a string"', "null", "3", '{"signal": NaN}', "{" * 100_000, '{"a": 1} trailing'],
)
def test_not_a_json_object(body: str) -> None:
    r = refusal("ANOMALY_DETECTED", 0, refs(3), body)
    assert r is not None and r.code == "INVALID_PATTERN"


def test_duplicate_key_refused() -> None:
    body = '{"signal": "a", "signal": "b", "baseline": 1, "observed": 2, "window": "1h"}'
    r = refusal("ANOMALY_DETECTED", 0, refs(3), body)
    assert r is not None and r.code == "INVALID_PATTERN" and "signal" in r.detail


def test_detail_never_echoes_long_values() -> None:
    long = "Z" * 5000
    for body in ({**VALID["ANOMALY_DETECTED"], "signal": long}, {**VALID["ANOMALY_DETECTED"], long: 1},
                 {**VALID["ANOMALY_DETECTED"], "window": [long]}):  # fmt: skip
        r = refusal("ANOMALY_DETECTED", 0, refs(3), body)
        assert r is not None and r.code == "INVALID_PATTERN"
        assert len(r.detail) <= 300 and "Z" * 100 not in r.detail


@pytest.mark.parametrize(
    "body",
    [
        '{"signal": "\\ud800", "baseline": 1, "observed": 2, "window": "1h"}',  # lone surrogate via escape
        '{"signal": "a\\u0000b", "baseline": 1, "observed": 2, "window": "1h"}',
        '{"signal": "a", "baseline": 1, "observed": 2, "window": "1h", "\\ud800\\u0000": 1}',
    ],
)
def test_unencodable_strings_refused_and_detail_stays_utf8(body: str) -> None:
    r = refusal("ANOMALY_DETECTED", 0, refs(3), body)
    assert r is not None and r.code == "INVALID_PATTERN"
    r.detail.encode("utf-8")  # the detail itself is safe to log and to put on the wire
    assert r.detail.isprintable()
