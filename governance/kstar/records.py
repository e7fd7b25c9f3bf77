"""KSTAR records (seed 003 §3.2): traces, perceptions, facts, skills and control tokens as strict models.

Decisions (the seed gives field names and meanings, not rules):

* Field names are the seed's exactly; ``Fact.schema`` is the attribute ``schema_name`` (``schema`` would shadow
  ``BaseModel.schema``) and is read and written as ``schema``. Unknown fields are refused (``extra="forbid"``),
  except that ``situation.now`` of the §13.4 example is a known optional field.
* Values are strict JSON types: ``true`` is not ``1``, ``"5"`` is not ``5``.
* Times are ISO-8601; an offset is converted to UTC and a time without one is taken as UTC (X-22: all times
  UTC). They are stored fixed-width to the millisecond, ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (sub-millisecond digits are
  dropped), so string order is time order (what filters and the SQL side compare) and a time converts exactly
  to the broker's epoch milliseconds.
* Required beyond the seed's store rules: ``situation.domain``, ``task.goal``, ``action.type`` (the STAR core
  that categories and queries use), ``result.success`` when a result is given, a token's ``granted_by``.
* A perception without a confidence gets 0.5 (the undeclared-confidence default of X-10).
* Free-form objects (``context``, ``parameters``, ``outcome``, ``data``) hold JSON only: depth ≤ 16, ≤ 256 entries
  per container, integers within ±(2**53 - 1) (RFC 8785 hashes nothing larger), finite numbers, no NUL.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from contracts.models import MAX_ID, MAX_ITEMS, MAX_LABEL, MAX_TEXT, Id, Label, OptText, Text, clean_text

MAX_DEPTH = 16
MAX_SAFE_INT = 2**53 - 1
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)


class KstarRefusal(Exception):
    """A KSTAR operation refused, with a stable reason code."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


# ---------------------------------------------------------------------------------------------- time


def parse_time(value: str) -> datetime:
    """An ISO-8601 time as an aware UTC datetime; ``ValueError`` if it is not one."""
    if not isinstance(value, str) or not 0 < len(value) <= 64:
        raise ValueError("must be an ISO-8601 time string")
    try:
        dt = datetime.fromisoformat(value)
        return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).astimezone(UTC)
    except (ValueError, OverflowError):
        raise ValueError("must be an ISO-8601 time, e.g. 2026-01-31T10:00:00Z") from None


def format_time(dt: datetime) -> str:
    # Formatted by hand: strftime does not zero-pad years below 1000 on every platform.
    return (
        f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}"
        f".{dt.microsecond // 1000:03d}Z"
    )


def normalise_time(value: str) -> str:
    return format_time(parse_time(value))


def iso_to_ms(value: str) -> int:
    return (parse_time(value) - _EPOCH) // _ONE_MS


def ms_to_iso(ms: int) -> str:
    return format_time(_EPOCH + ms * _ONE_MS)


Time = Annotated[str, AfterValidator(normalise_time)]

# ---------------------------------------------------------------------------------------------- values

Name = Annotated[str, Field(min_length=1, max_length=MAX_LABEL), AfterValidator(clean_text)]
_SCOPE_FORBIDDEN = re.compile(r"[\s*{}\x00-\x1f\x7f]")


def is_scope(scope: str) -> bool:
    """A token scope: ``*`` (everything), or ``:``/``/``-separated non-empty segments without whitespace, ``*``,
    braces, ``.`` or ``..`` segments, so that prefix coverage (``tokens.scope_covers``) cannot be tricked."""
    if scope == "*":
        return True
    if not 0 < len(scope) <= MAX_LABEL or _SCOPE_FORBIDDEN.search(scope):
        return False
    return all(seg not in ("", ".", "..") for seg in re.split(r"[:/]", scope))


def _scope(value: str) -> str:
    if not is_scope(value):
        raise ValueError("must be '*' or ':'/'/'-separated segments without spaces, '*', braces, '.' or '..'")
    return clean_text(value)


Scope = Annotated[str, AfterValidator(_scope)]


def check_json(value: Any, depth: int = 0) -> None:
    """Refuse what is not bounded JSON (see the module docstring)."""
    if depth > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH}")
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INT:
            raise ValueError("integers must be within ±(2**53 - 1)")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("numbers must be finite")
    elif isinstance(value, str):
        if len(value) > MAX_TEXT:
            raise ValueError(f"strings hold at most {MAX_TEXT} characters")
        clean_text(value)
    elif isinstance(value, list | dict):
        if len(value) > MAX_ITEMS:
            raise ValueError(f"arrays and objects hold at most {MAX_ITEMS} entries")
        for key in value if isinstance(value, dict) else ():
            if not isinstance(key, str) or len(key) > MAX_ID:
                raise ValueError(f"keys must be strings of at most {MAX_ID} characters")
            clean_text(key)
        for item in value.values() if isinstance(value, dict) else value:
            check_json(item, depth + 1)
    else:
        raise ValueError(f"not a JSON value ({type(value).__name__})")


def _json(value: Any) -> Any:
    check_json(value)
    return value


Json = Annotated[Any, AfterValidator(_json)]
JsonObject = Annotated[dict[str, Any], AfterValidator(_json)]
Confidence = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0, le=MAX_SAFE_INT)]
B64 = Annotated[str, Field(max_length=MAX_ID), AfterValidator(clean_text)]


class KstarModel(BaseModel):
    model_config = ConfigDict(
        extra="forbid", strict=True, validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )


# ---------------------------------------------------------------------------------------------- traces (F-03)


class Situation(KstarModel):
    domain: Name
    actor: Name | None = None  # a principal URN, e.g. urn:principal:org:ieee:role:teacher:person:smith
    channel: Name | None = None
    context: JsonObject = Field(default_factory=dict)
    now: Time | None = None  # §13.4's example sends the caller's clock here


class Task(KstarModel):
    goal: Text
    constraints: list[Json] = Field(default_factory=list, max_length=MAX_ITEMS)


class Action(KstarModel):
    type: Name
    parameters: JsonObject = Field(default_factory=dict)
    tools_used: list[Name] = Field(default_factory=list, max_length=MAX_ITEMS)


class Result(KstarModel):
    success: bool
    outcome: JsonObject | OptText | None = None
    side_effects: list[Json] = Field(default_factory=list, max_length=MAX_ITEMS)


class TraceMetadata(KstarModel):
    mode: Literal["interactive", "autonomous", "background"] | None = None
    tags: list[Label] = Field(default_factory=list, max_length=MAX_ITEMS)
    linked_traces: list[Id] = Field(default_factory=list, max_length=MAX_ITEMS)


class Trace(KstarModel):
    id: Id
    timestamp: Time
    situation: Situation
    task: Task
    action: Action
    result: Result | None = None
    metadata: TraceMetadata = Field(default_factory=TraceMetadata)


# ------------------------------------------------------------------------------------- declarative (F-04, F-05)


class Perception(KstarModel):
    id: Id
    type: Name | None = None
    subject: Name | None = None
    content: Text
    confidence: Confidence = 0.5
    evidence: list[Id] = Field(default_factory=list, max_length=MAX_ITEMS)  # trace ids
    created_at: Time
    updated_at: Time
    valid_until: Time | None = None


class Fact(KstarModel):
    id: Id
    schema_name: Id = Field(alias="schema")
    data: JsonObject
    source: Name | None = None
    verified: bool = False
    created_at: Time
    updated_at: Time


# ---------------------------------------------------------------------------------------------- skills (F-06)


class LearnedFrom(KstarModel):
    traces: list[Id] = Field(default_factory=list, max_length=MAX_ITEMS)
    explicit_training: bool = False


class SkillDefinition(KstarModel):
    triggers: list[Json] = Field(default_factory=list, max_length=MAX_ITEMS)
    preconditions: list[Json] = Field(default_factory=list, max_length=MAX_ITEMS)
    procedure: OptText | None = None


Level = Literal["novice", "competent", "proficient", "expert"]


class Maturity(KstarModel):
    """``successes`` is ours (X-23): the integer behind ``success_rate``, so repeated updates do not drift."""

    level: Level = "novice"
    success_rate: Confidence = 0.0
    last_used: Time | None = None
    usage_count: Count = 0
    successes: Count | None = None

    @model_validator(mode="after")
    def _derive(self) -> Maturity:
        # A seed document has no ``successes``: recover it from the rate, then make the rate exact.
        if self.successes is None:
            self.successes = round(self.success_rate * self.usage_count)
        if self.successes > self.usage_count:
            raise ValueError("successes cannot exceed usage_count")
        self.success_rate = self.successes / self.usage_count if self.usage_count else 0.0
        return self


class Skill(KstarModel):
    id: Id
    name: Name
    description: OptText | None = None
    learned_from: LearnedFrom = Field(default_factory=LearnedFrom)
    definition: SkillDefinition
    maturity: Maturity = Field(default_factory=Maturity)


# ---------------------------------------------------------------------------------------------- control tokens (F-07)


class ControlToken(KstarModel):
    token_id: Id
    type: Id
    scope: Scope
    permissions: list[Name] = Field(default_factory=list, max_length=MAX_ITEMS)
    granted_by: Name
    granted_at: Time
    delegation_chain: list[Id] = Field(default_factory=list, max_length=MAX_ITEMS)  # direct parent first, root last
    expires_at: Time | None = None  # None: no expiry (not allowed for session tokens, X-22)
    revoked: bool = False
    revoked_at: Time | None = None
    revocation_reason: OptText | None = None
    signature: B64 = ""  # base64 Ed25519 signature over tokens.token_signing_bytes
    lineage_hash: B64 = ""  # "sha256:<hex>" of the delegation chain
    signer_key: B64 = ""  # base64 of the raw Ed25519 public key that signed it


# ---------------------------------------------------------------------------------------------- parsing

KIND_MODELS: dict[str, type[BaseModel]] = {
    "trace": Trace,
    "perception": Perception,
    "fact": Fact,
    "skill": Skill,
    "control_token": ControlToken,
}
# Times the writer may leave out: filled with the write's broker time, so a replay fills the same value.
_FILLED: dict[str, tuple[str, ...]] = {
    "trace": ("timestamp",),
    "perception": ("created_at", "updated_at"),
    "fact": ("created_at", "updated_at"),
    "skill": (),
    "control_token": ("granted_at",),
}
_ID_FIELD = {"trace": "id", "perception": "id", "fact": "id", "skill": "id", "control_token": "token_id"}


def describe(exc: ValidationError) -> str:
    """The first error as ``path: message``, never the offending value."""
    errors = exc.errors(include_url=False, include_input=False)
    first = errors[0]
    # Drop pydantic's union-member tags, e.g. "function-after[...]" or "dict[str,any]".
    parts = [f"[{p}]" if isinstance(p, int) else p for p in first["loc"] if not isinstance(p, str) or "[" not in p]
    path = ".".join(parts).replace(".[", "[") or "record"
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{path[:200]}: {first['msg'][:200]}{more}"


def parse_record(kind: str, doc: Mapping[str, Any], at_iso: str) -> BaseModel:
    """Validate a record document; missing timestamps are filled with ``at_iso`` (the write's broker time)."""
    model = KIND_MODELS.get(kind)
    if model is None:
        raise KstarRefusal("KSTAR_UNKNOWN_KIND", "unknown record kind, expected one of "
                           f"{', '.join(KIND_MODELS)}")  # fmt: skip
    if not isinstance(doc, Mapping):
        raise KstarRefusal("KSTAR_INVALID_RECORD", "record: must be a JSON object")
    at = normalise_time(at_iso)
    filled = dict(doc)
    for key in _FILLED[kind]:
        if filled.get(key) is None:
            filled[key] = at
    try:
        return model.model_validate(filled)
    except ValidationError as exc:
        raise KstarRefusal("KSTAR_INVALID_RECORD", describe(exc)) from None


def canonical_doc(model: BaseModel) -> dict[str, Any]:
    """The stored form: JSON types, every field present (nulls included), ``schema`` under its seed name."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=False)


def record_id(kind: str, model: BaseModel) -> str:
    if kind not in _ID_FIELD:
        raise KstarRefusal("KSTAR_UNKNOWN_KIND", "unknown record kind")
    return str(getattr(model, _ID_FIELD[kind]))
