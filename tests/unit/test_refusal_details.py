"""A refusal never carries what was submitted: for each reason code whose detail is built from
the request (a value, a name, an id, a time), the detail-producing code is fed a marker and the
detail must not contain it. The HTTP edge is walked the same way on the live stack by
tests/integration/test_hostile_walk.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel, Field, ValidationError

from governance.kstar import bundle as b
from governance.kstar.apply import MemoryView, decide
from governance.kstar.domains import LEARNER_PROFILE, parse_schema, validate_fact, violation
from governance.kstar.records import KstarRefusal, parse_record
from governance.kstar.tokens import check_new_token, revoke
from projections.gate.gateway import describe_validation
from projections.http.text_guard import body_problem, path_problem, query_problem
from projections.http.votes import parse_instant
from tests.unit.test_kstar_apply import TRACE, ctx, held, op
from tests.unit.test_kstar_records import fact
from tests.unit.test_kstar_tokens import AT, NOW, TYPES, token

M = "zq7marker"
ROOT = token(f"{M}-root", "delegation", permissions=("evaluate", "feedback", "delegate"))
PLAIN = token(f"{M}-plain", "capability_grant", permissions=("evaluate", "feedback"))


def _child(**changes: Any) -> Any:
    return token(**{"token_id": f"{M}-child", "chain": (f"{M}-root",), **changes})


def _token(t: Any, parents: dict[str, Any], at_ms: int = NOW) -> Callable[[], object]:
    return lambda: check_new_token(t, parents, TYPES, at_ms)


def _decide(*ops: Any) -> Callable[[], object]:
    def run() -> object:
        view = MemoryView()
        for o in ops:
            out = decide(o, view, ctx())
            if out.doc is not None:
                held(view, o.kind, out.doc, out.name)
        return None

    return run


def _bundle(**fields: Any) -> Callable[[], object]:
    doc = {"format": b.FORMAT, "version": "1.0.0", "exported_at": "2026-01-01T00:00:00.000Z", **fields}
    return lambda: b.decode_bundle(json.dumps(doc).encode())


SKILL = {"id": f"{M}-s1", "name": f"{M}-skill", "definition": {"procedure": "x"}}
KSTAR_CASES: dict[str, Callable[[], object]] = {
    "KSTAR_SCHEMA_VIOLATION": lambda: validate_fact(LEARNER_PROFILE, fact(learning_style=M)),
    "KSTAR_SCHEMA_VIOLATION (type)": lambda: validate_fact(LEARNER_PROFILE, fact(strengths=[{M: M}])),
    "KSTAR_UNKNOWN_SCHEMA": lambda: validate_fact(None, fact(schema=M)),
    "KSTAR_INVALID_SCHEMA": lambda: parse_schema("s", {"type": M}),
    "KSTAR_INVALID_SCHEMA (number)": lambda: parse_schema("s", {"maximum": 2**60 + 7}),
    "KSTAR_INVALID_RECORD": lambda: parse_record("perception", {"id": M, "content": M, "confidence": M}, AT),
    "KSTAR_UNKNOWN_KIND": lambda: parse_record(M, {}, AT),
    "KSTAR_NOT_YOUR_MEMORY": _decide(op("trace", "t1", TRACE).model_copy(update={"memory": M})),
    "KSTAR_ID_MISMATCH": _decide(op("trace", M, TRACE)),
    "KSTAR_TRACE_IMMUTABLE": _decide(
        op("trace", M, {**TRACE, "id": M}), op("trace", M, {**TRACE, "id": M, "task": {"goal": "other"}})
    ),
    "SKILL_NOT_FOUND": _decide(op("skill", M, {"outcome": True}, verb="SKILL_OUTCOME")),
    "KSTAR_SKILL_NAME_TAKEN": _decide(
        op("skill", f"{M}-s1", SKILL), op("skill", f"{M}-s2", {**SKILL, "id": f"{M}-s2"})
    ),
    "TOKEN_UNKNOWN_TYPE": _token(token(M, type_=f"{M}_type"), {}),
    "DELEGATION_PARENT_UNKNOWN": _token(_child(), {}),
    "DELEGATION_PARENT_REVOKED": _token(_child(), {ROOT.token_id: revoke(ROOT, M, AT)}),
    "DELEGATION_PARENT_EXPIRED": _token(_child(), {ROOT.token_id: ROOT}, at_ms=NOW + 10**12),  # after the term
    "DELEGATION_NOT_ALLOWED": _token(_child(chain=(PLAIN.token_id,)), {PLAIN.token_id: PLAIN}),
    "DELEGATION_SCOPE_WIDENED": _token(_child(scope="course:CS102"), {ROOT.token_id: ROOT}),
    "DELEGATION_PERMISSIONS_WIDENED": _token(_child(permissions=("evaluate", "feedback", M)), {ROOT.token_id: ROOT}),
    "DELEGATION_EXPIRY_BEYOND_PARENT": _token(_child(expires_at=None), {ROOT.token_id: ROOT}),
    "DELEGATION_CHAIN_BROKEN": _token(
        _child(chain=(ROOT.token_id, PLAIN.token_id)), {ROOT.token_id: ROOT, PLAIN.token_id: PLAIN}
    ),
    "BUNDLE_BAD_FORMAT (format)": _bundle(format=M),
    "BUNDLE_BAD_FORMAT (version)": _bundle(version=M),
    "BUNDLE_BAD_FORMAT (major)": _bundle(version=f"7.0.0-{M}"),
}


@pytest.mark.parametrize("case", sorted(KSTAR_CASES))
def test_kstar_refusals_do_not_carry_the_submitted_text(case: str) -> None:
    code = case.split(" ")[0]
    with pytest.raises((KstarRefusal, b.BundleError)) as info:
        KSTAR_CASES[case]()
    refusal: Any = info.value
    assert refusal.code == code, (refusal.code, refusal.detail)
    assert M not in refusal.detail, refusal.detail


def test_a_schema_violation_names_the_path_and_rule() -> None:
    assert violation(["grade"], "maximum", 100) == "data.grade: breaks the schema's maximum rule (100)"
    assert violation([f"{M} x", 0], "enum", [{"a": 1}]) == "data.…[0]: breaks the schema's enum rule"
    assert violation([], "type", "x" * 300) == "data: breaks the schema's type rule"


@pytest.mark.parametrize("text", [M, f"2026-13-01T00:00:00{M}", f"{M}Z"])
def test_invalid_as_of_does_not_quote_the_instant(text: str) -> None:  # INVALID_AS_OF
    with pytest.raises(ValueError) as info:
        parse_instant(text)
    assert M not in str(info.value)


class _Body(BaseModel):
    count: int = Field(ge=0)
    kind: str = Field(pattern="^[a-z]+$", max_length=8)


@pytest.mark.parametrize("doc", [{"count": M, "kind": "a"}, {"count": 1, "kind": M * 2}, {"count": 1, "kind": "A1"}])
def test_invalid_request_from_validation_does_not_quote_the_input(doc: dict[str, Any]) -> None:  # INVALID_REQUEST
    with pytest.raises(ValidationError) as info:
        _Body.model_validate(doc)
    detail = describe_validation(list(info.value.errors()))
    assert M not in detail and detail.split(":")[0] in ("count", "kind")


@pytest.mark.parametrize(
    "problem",
    [
        path_problem(f"/kstar/v1/traces/{M}%00{M}".encode()),
        path_problem(f"/kstar/v1/traces/{M}%ED%A0%80{M}".encode()),
        query_problem(f"subject={M}%FF{M}".encode()),
        query_problem(f"{M}%00=1".encode()),
        body_problem(f'{{"a": "{M}\\u0000{M}"}}'.encode()),
        body_problem(f'{{"{M}\\ud800": 1}}'.encode()),
        body_problem(b'{"a": ["' + M.encode() + b'\xed\xa0\x80"]}'),
    ],
)
def test_the_text_guard_names_where_not_what(problem: str | None) -> None:  # INVALID_REQUEST / INVALID_FIELD
    assert problem is not None and M not in problem, problem
