"""KSTAR extension points (seed 003 §10): domain fact schemas, trace categories and control-token types.

Domain schemas. The seed's ``education.yaml`` is a file of two schemas, ``learner_profile`` and
``teacher_profile``, and §8.3 reads facts as ``get_facts(schema="learner_profile")`` and
``query_facts(schema="learner_profile", path="$.learning_style", value="visual")``. So a fact names one schema
of the file (``schema: "learner_profile"``), its ``data`` *is* the profile (``{"learning_style": "visual"}``),
and a JSONPath applies to ``data`` directly. ``EDUCATION`` is therefore the tuple of the file's two schemas.
Schemas are JSON Schema draft 2020-12; like the YAML, they allow properties they do not name.

Trace categories (X-24): a trace whose ``situation.domain`` is a category's domain must carry each of the
category's required fields as a key of ``action.parameters`` or of ``result.outcome`` (when it is an object).

Token types: the four built-ins of §7.1 accept any scope (pattern ``*``) and require no permission. A custom
pattern is literal text with ``{placeholder}`` parts; a placeholder matches one non-empty segment, i.e. text
without ``:``, ``/`` or whitespace, so ``course:{course_id}`` matches ``course:CS101`` but not
``course:CS101/week1`` nor ``course:``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import rfc8785
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match
from pydantic import Field, ValidationError

from contracts.models import MAX_ITEMS, MAX_LABEL, MAX_TEXT
from governance.kstar.records import Fact, KstarModel, KstarRefusal, Name, Trace, check_json, describe

DRAFT = "https://json-schema.org/draft/2020-12/schema"
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,255}")
_PLAIN = re.compile(r"[A-Za-z0-9_$-]{1,64}")  # a data key or schema keyword shown in a refusal


@dataclass(frozen=True)
class DomainSchema:
    name: str
    version: str
    json_schema: dict[str, Any]


_STRINGS = {"type": "array", "items": {"type": "string"}}
LEARNER_PROFILE = DomainSchema("learner_profile", "1.0.0", {
    "$schema": DRAFT,
    "type": "object",
    "properties": {
        "learning_style": {"type": "string", "enum": ["visual", "auditory", "kinesthetic", "reading"]},
        "strengths": _STRINGS,
        "growth_areas": _STRINGS,
        "preferred_ai_tools": _STRINGS,
        "study_patterns": {
            "type": "object",
            "properties": {"peak_hours": {"type": "array"}, "session_length_preferred": {"type": "string"}},
        },
    },
})  # fmt: skip
TEACHER_PROFILE = DomainSchema("teacher_profile", "1.0.0", {
    "$schema": DRAFT,
    "type": "object",
    "properties": {
        "teaching_style": {"type": "string"},
        "feedback_tone": {"type": "string"},
        "expertise_areas": _STRINGS,
    },
})  # fmt: skip
EDUCATION: tuple[DomainSchema, ...] = (LEARNER_PROFILE, TEACHER_PROFILE)
BUILTIN_SCHEMAS: dict[str, DomainSchema] = {s.name: s for s in EDUCATION}


def _check_name(what: str, name: str) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise KstarRefusal("KSTAR_INVALID_SCHEMA" if what == "schema" else "KSTAR_INVALID_RECORD",
                           f"{what} name: 1-256 characters of letters, digits, '_', '.', ':', '-'")  # fmt: skip


def parse_schema(name: str, doc: Mapping[str, Any], version: str | None = None) -> DomainSchema:
    """A user-registered schema; its version defaults to the hash of its canonical JSON."""
    _check_name("schema", name)
    if not isinstance(doc, Mapping):
        raise KstarRefusal("KSTAR_INVALID_SCHEMA", "a schema must be a JSON object")
    schema = dict(doc)
    try:
        check_json(schema)
        canonical = rfc8785.dumps(schema)
        if len(canonical) > MAX_TEXT:
            raise ValueError(f"larger than {MAX_TEXT} bytes as JSON")
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:  # its message quotes the schema: the path and the metaschema's rule instead
        where = "/".join(_key(str(p)) for p in exc.path) or "(root)"
        raise KstarRefusal("KSTAR_INVALID_SCHEMA", f"not a JSON Schema at {where}: breaks the metaschema's "
                           f"{_key(str(exc.validator))} rule") from None  # fmt: skip
    except rfc8785.CanonicalizationError:  # its message quotes the number
        raise KstarRefusal("KSTAR_INVALID_SCHEMA", "schema: a number outside JSON's exact range") from None
    except ValueError as exc:  # check_json and the size: fixed messages
        raise KstarRefusal("KSTAR_INVALID_SCHEMA", f"schema: {str(exc)[:200]}") from None
    return DomainSchema(name, version or "sha256:" + hashlib.sha256(canonical).hexdigest(), schema)


def validate_fact(schema: DomainSchema | None, fact: Fact) -> None:
    if schema is None:
        raise KstarRefusal("KSTAR_UNKNOWN_SCHEMA", "no schema of that name is registered")
    try:
        error = best_match(Draft202012Validator(schema.json_schema).iter_errors(fact.data))
    except Exception as exc:  # e.g. an unresolvable $ref: never fetched, so the schema is unusable
        raise KstarRefusal("KSTAR_INVALID_SCHEMA", "the registered schema cannot be applied: "
                           f"{type(exc).__name__}") from None  # fmt: skip
    if error is not None:
        raise KstarRefusal("KSTAR_SCHEMA_VIOLATION", violation(error.absolute_path, str(error.validator),
                                                               error.validator_value))  # fmt: skip


def violation(path: Iterable[Any], rule: str, constraint: Any) -> str:
    """Where the data breaks which rule of the schema, and the rule's own value when it is short
    (``data.grade: breaks the schema's maximum rule (100)``); never the data's value. jsonschema's own
    message quotes the value, so it is not used. A key that is not a plain name shows as ``…``."""
    where = "data" + "".join(f"[{p}]" if isinstance(p, int) else f".{_key(str(p))}" for p in path)
    shown = rfc8785.dumps(constraint).decode() if _scalars(constraint) else ""
    said = f" ({shown})" if shown and len(shown) <= 200 else ""
    return f"{where}: breaks the schema's {_key(rule)} rule{said}"


def _key(name: str) -> str:
    return name if _PLAIN.fullmatch(name) else "…"


def _scalars(value: Any) -> bool:
    items = value if isinstance(value, list) else [value]
    return all(isinstance(v, str | int | float | bool) or v is None for v in items)


# ---------------------------------------------------------------------------------------------- trace categories


@dataclass(frozen=True)
class TraceCategory:
    name: str
    domain: str
    required_fields: tuple[str, ...]


class _CategoryDoc(KstarModel):
    name: Name
    domain: Name
    required_fields: list[Name] = Field(default_factory=list, max_length=MAX_ITEMS)


EDUCATION_CATEGORIES: tuple[TraceCategory, ...] = (
    TraceCategory("artifact_evaluation", "education.evaluation", ("artifact_id", "rubric_id", "scores")),
    TraceCategory("module_authoring", "education.curriculum", ("module_id", "learning_objectives")),
)


def parse_category(doc: Mapping[str, Any]) -> TraceCategory:
    try:
        c = _CategoryDoc.model_validate(dict(doc) if isinstance(doc, Mapping) else doc)
    except ValidationError as exc:
        raise KstarRefusal("KSTAR_INVALID_RECORD", "trace category " + describe(exc)) from None
    return TraceCategory(c.name, c.domain, tuple(dict.fromkeys(c.required_fields)))


def check_trace_categories(categories: Iterable[TraceCategory], trace: Trace) -> None:
    outcome = trace.result.outcome if trace.result is not None else None
    present = set(trace.action.parameters) | (set(outcome) if isinstance(outcome, dict) else set())
    for category in categories:
        if category.domain != trace.situation.domain:
            continue
        missing = [f for f in category.required_fields if f not in present]
        if missing:
            raise KstarRefusal("KSTAR_CATEGORY_FIELD_MISSING", f"trace category {category.name!r} "
                               f"({category.domain}) needs {', '.join(missing)} in action.parameters "
                               "or result.outcome")  # fmt: skip


# ---------------------------------------------------------------------------------------------- token types


@dataclass(frozen=True)
class TokenType:
    name: str
    description: str
    scope_pattern: str
    required_permissions: tuple[str, ...]


class _TokenTypeDoc(KstarModel):
    name: Name
    description: Name
    scope_pattern: Name
    required_permissions: list[Name] = Field(default_factory=list, max_length=MAX_ITEMS)


BUILTIN_TOKEN_TYPES: dict[str, TokenType] = {
    t.name: t
    for t in (
        TokenType("capability_grant", "Authority to use a capability", "*", ()),
        TokenType("resource_access", "Access to specific resource", "*", ()),
        TokenType("delegation", "Authority to grant to others", "*", ()),
        TokenType("session", "Temporary session authority", "*", ()),
    )
}
EDUCATION_TOKEN_TYPES: tuple[TokenType, ...] = (
    TokenType("evaluation_authority", "Authority to evaluate student artifacts", "course:{course_id}",
              ("evaluate", "feedback")),
    TokenType("submission_authority", "Authority to submit artifacts", "assignment:{assignment_id}",
              ("submit", "resubmit")),
)  # fmt: skip

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SEGMENT = r"[^:/\s]+"


def _pattern_regex(pattern: str) -> re.Pattern[str] | None:
    """The regex of a scope pattern, or None if the pattern is malformed (stray braces, whitespace, ``*`` inside)."""
    if pattern == "*":
        return re.compile(r"(?s:.+)")
    literals = _PLACEHOLDER.split(pattern)[::2]  # split keeps group names at odd indexes
    if any(re.search(r"[{}*\s]", lit) for lit in literals) or not pattern:
        return None
    out, pos = [], 0
    for m in _PLACEHOLDER.finditer(pattern):
        out += [re.escape(pattern[pos : m.start()]), _SEGMENT]
        pos = m.end()
    out.append(re.escape(pattern[pos:]))
    return re.compile("".join(out))


def scope_matches_pattern(scope: str, pattern: str) -> bool:
    regex = _pattern_regex(pattern)
    return regex is not None and regex.fullmatch(scope) is not None


def parse_token_type(doc: Mapping[str, Any]) -> TokenType:
    try:
        t = _TokenTypeDoc.model_validate(dict(doc) if isinstance(doc, Mapping) else doc)
    except ValidationError as exc:
        raise KstarRefusal("KSTAR_INVALID_RECORD", "token type " + describe(exc)) from None
    _check_name("token type", t.name)
    if len(t.scope_pattern) > MAX_LABEL or _pattern_regex(t.scope_pattern) is None:
        raise KstarRefusal("KSTAR_INVALID_RECORD", "token type scope_pattern: '*' or literal text with "
                           "{placeholder} parts, no other braces, '*' or whitespace")  # fmt: skip
    return TokenType(t.name, t.description, t.scope_pattern, tuple(dict.fromkeys(t.required_permissions)))
