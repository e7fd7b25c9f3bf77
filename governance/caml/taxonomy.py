"""Observation types, domains, typed patterns and the Table-4 write gates (seed paper, Table 4).

Decisions (beyond the seed):

* Kind names are matched exactly (case-sensitive): the six wire names are canonical, the six short
  names are aliases. Every function here accepts either and canonicalizes.
* ``system=True`` only lifts ``SYSTEM_ONLY_TYPE``; the other gates still apply per the table (the
  system-only CONSENSUS_SIGNAL has no reputation or evidence minimum).
* A non-finite reputation (NaN, inf) is refused as ``REPUTATION_TOO_LOW``: NaN compares false
  with everything and would otherwise slip through.
* Evidence is a list of at most ``MAX_LIST`` opaque refs, each a 1..256-char printable string with
  no whitespace. A duplicate ref is malformed: ``count = len(evidence)`` must not be padded by
  repeating one ref.
* Patterns: strict types (no ``"0.5"`` for a number, no ``true`` for an int, an int is fine for a
  float), finite floats, every string 1..1024 chars, every list at most 64 items, unknown keys and
  duplicate keys refused. All fields are required except DOMAIN_SIGNAL's ``magnitude``.
  ANOMALY_DETECTED's ``baseline``/``observed`` take a number or a string (the seed leaves them
  untyped). ``effective_date`` is a ``YYYY-MM-DD`` calendar date, kept as that string.
* Pattern strings may not hold NUL or a lone surrogate (``contracts.models.clean_text``), so a
  parsed pattern always re-encodes as UTF-8 (Postgres, Avro, ``merkle.canonical_json``).
* Refusal details name the field (cut to 64 chars, non-printables replaced) and the rule, never
  the submitted value.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from contracts.models import clean_text

ObservationKind = Literal[
    "ANOMALY_DETECTED", "DOMAIN_SIGNAL", "WORKFLOW_PATTERN", "EFFICIENCY_DELTA", "REGULATORY_SHIFT", "CONSENSUS_SIGNAL"
]
KINDS: tuple[ObservationKind, ...] = get_args(ObservationKind)

ALIASES: dict[str, ObservationKind] = {
    "ANOMALY": "ANOMALY_DETECTED",
    "DOMAIN": "DOMAIN_SIGNAL",
    "WORKFLOW": "WORKFLOW_PATTERN",
    "EFFICIENCY": "EFFICIENCY_DELTA",
    "REGULATORY": "REGULATORY_SHIFT",
    "CONSENSUS": "CONSENSUS_SIGNAL",
}

DOMAINS: tuple[str, ...] = (
    "legal", "finance", "procurement", "hr", "customer_support", "logistics", "manufacturing",
    "healthcare", "real_estate", "education", "government", "retail", "technology", "general",
)  # fmt: skip

DAY_MS = 86_400_000
MAX_TEXT = 1024
MAX_LIST = 64
MAX_REF = 256
_MAX_FIELD_IN_DETAIL = 64


def canonical_kind(name: str) -> ObservationKind:
    """The wire name of a kind given its wire name or short alias; ``ValueError`` otherwise."""
    if name in KINDS:
        return name  # type: ignore[return-value]  # narrowed by the membership test
    try:
        return ALIASES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown observation kind {_clip(str(name))!r}") from None


@dataclass(frozen=True)
class TypeRule:
    min_reputation: float | None  # None: no author reputation applies (system-generated)
    max_age_days: int  # older than this -> excluded from recall
    min_evidence: int
    system_only: bool


TYPE_RULES: dict[ObservationKind, TypeRule] = {
    "ANOMALY_DETECTED": TypeRule(0.0, 30, 3, False),
    "DOMAIN_SIGNAL": TypeRule(10.0, 60, 5, False),
    "WORKFLOW_PATTERN": TypeRule(20.0, 90, 10, False),
    "EFFICIENCY_DELTA": TypeRule(20.0, 120, 5, False),
    "REGULATORY_SHIFT": TypeRule(40.0, 365, 1, False),
    "CONSENSUS_SIGNAL": TypeRule(None, 180, 0, True),
}


# --- typed patterns --------------------------------------------------------------------------------

# clean_text: no NUL, no lone surrogate (a JSON "\ud800" escape would decode to one and break UTF-8 later).
Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT), AfterValidator(clean_text)]
Number = Annotated[float, Field(allow_inf_nan=False)]
TextList = Annotated[list[Text], Field(max_length=MAX_LIST)]
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _calendar_date(s: str) -> str:
    # fromisoformat alone would also take week dates and "20240101"; the pattern pins YYYY-MM-DD.
    if not _ISO_DATE.fullmatch(s):
        raise ValueError("expected an ISO date YYYY-MM-DD")
    try:
        date.fromisoformat(s)  # rejects 2024-02-30
    except ValueError:
        raise ValueError("not a calendar date") from None
    return s


IsoDate = Annotated[str, Field(max_length=10), AfterValidator(_calendar_date)]


class _Pattern(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class WorkflowPattern(_Pattern):
    steps: Annotated[list[Text], Field(min_length=1, max_length=MAX_LIST)]
    avg_resolution_turns: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    success_rate: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
    failure_modes: TextList
    prerequisites: TextList


class EfficiencyDelta(_Pattern):
    metric: Text
    baseline_value: Number
    improved_value: Number
    method: Text
    conditions: TextList | Text


class AnomalyDetected(_Pattern):
    signal: Text
    baseline: Number | Text
    observed: Number | Text
    window: Text


class DomainSignal(_Pattern):
    trend: Text
    direction: Literal["up", "down", "flat", "emerging"]
    magnitude: Number | None = None
    window: Text


class RegulatoryShift(_Pattern):
    jurisdiction: Text
    rule: Text
    effective_date: IsoDate
    impact: Text


class ConsensusSignal(_Pattern):
    source_observation_id: Annotated[str, Field(min_length=1, max_length=MAX_REF), AfterValidator(clean_text)]
    validations: Annotated[int, Field(ge=0)]
    refutations: Annotated[int, Field(ge=0)]


PATTERN_MODELS: dict[ObservationKind, type[BaseModel]] = {
    "ANOMALY_DETECTED": AnomalyDetected,
    "DOMAIN_SIGNAL": DomainSignal,
    "WORKFLOW_PATTERN": WorkflowPattern,
    "EFFICIENCY_DELTA": EfficiencyDelta,
    "REGULATORY_SHIFT": RegulatoryShift,
    "CONSENSUS_SIGNAL": ConsensusSignal,
}


# --- gates -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Refusal:
    code: str
    detail: str


def observation_refusal(
    kind: ObservationKind, reputation: float, evidence: Sequence[str], pattern_json: str, *, system: bool = False
) -> Refusal | None:
    """The first Table-4 gate an observation fails, or None. Order: SYSTEM_ONLY_TYPE,
    REPUTATION_TOO_LOW, INSUFFICIENT_EVIDENCE, INVALID_PATTERN."""
    kind = canonical_kind(kind)
    rule = TYPE_RULES[kind]
    if rule.system_only and not system:
        return Refusal("SYSTEM_ONLY_TYPE", f"{kind} is generated by the system only")
    if rule.min_reputation is not None and not (
        isinstance(reputation, int | float) and math.isfinite(reputation) and reputation >= rule.min_reputation
    ):
        return Refusal("REPUTATION_TOO_LOW", f"{kind} needs author reputation >= {rule.min_reputation:g}")
    if (bad := evidence_problem(evidence)) is not None:
        return Refusal("INSUFFICIENT_EVIDENCE", bad)
    if len(evidence) < rule.min_evidence:
        return Refusal(
            "INSUFFICIENT_EVIDENCE", f"{kind} needs >= {rule.min_evidence} evidence refs, got {len(evidence)}"
        )
    if (bad := pattern_problem(kind, pattern_json)) is not None:
        return Refusal("INVALID_PATTERN", bad)
    return None


def evidence_problem(evidence: Sequence[str]) -> str | None:
    """Why an evidence list is malformed, or None. Refs are opaque: only their shape is checked."""
    if isinstance(evidence, str | bytes) or not isinstance(evidence, Sequence):
        return "evidence must be a list of refs"
    if len(evidence) > MAX_LIST:
        return f"at most {MAX_LIST} evidence refs"
    seen: set[str] = set()
    for i, ref in enumerate(evidence):
        if not isinstance(ref, str) or not 1 <= len(ref) <= MAX_REF:
            return f"evidence[{i}] must be a string of 1..{MAX_REF} chars"
        if not ref.isprintable() or any(c.isspace() for c in ref):
            return f"evidence[{i}] must be printable with no whitespace"
        if ref in seen:
            return f"evidence[{i}] repeats an earlier ref"
        seen.add(ref)
    return None


def parse_pattern(kind: ObservationKind, pattern_json: str) -> BaseModel:
    """The typed pattern of ``kind``; ``ValueError`` with a value-free reason if it does not fit."""
    if not isinstance(pattern_json, str):
        raise ValueError("pattern must be a JSON object")
    try:
        obj = json.loads(pattern_json, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constant)
    except _DuplicateKey as e:
        raise ValueError(f"{_clip(str(e))}: duplicate key") from None
    except (ValueError, RecursionError):
        raise ValueError("pattern is not valid JSON") from None
    if not isinstance(obj, dict):
        raise ValueError("pattern must be a JSON object")
    try:
        return PATTERN_MODELS[canonical_kind(kind)].model_validate(obj)
    except ValidationError as e:
        err = e.errors(include_url=False, include_input=False, include_context=False)[0]
        loc = ".".join(str(p) for p in err["loc"]) or "pattern"
        raise ValueError(f"{_clip(loc)}: {_clip(err['msg'], 200)}") from None


def pattern_problem(kind: ObservationKind, pattern_json: str) -> str | None:
    try:
        parse_pattern(kind, pattern_json)
    except ValueError as e:
        return str(e)
    return None


def max_age_ms(kind: ObservationKind) -> int:
    return TYPE_RULES[canonical_kind(kind)].max_age_days * DAY_MS


def is_over_age(kind: ObservationKind, created_ms: int, now_ms: int) -> bool:
    """Strictly older than the type's max age (exactly max age is still recalled)."""
    return now_ms - created_ms > max_age_ms(kind)


class _DuplicateKey(Exception):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN / Infinity are Python extensions, not JSON


def _clip(s: str, n: int = _MAX_FIELD_IN_DETAIL) -> str:
    # Field names come from the client: cut them short and keep the detail printable, valid UTF-8.
    s = s if len(s) <= n else s[: n - 1] + "…"
    return "".join(c if c.isprintable() else "?" for c in s)
