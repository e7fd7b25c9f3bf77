"""Every operation of the live OpenAPI document, walked with text that is not text: each path,
query and header parameter and each string field of a JSON body gets, in turn, a NUL, a lone
surrogate and invalid UTF-8, between two markers, with every other value valid (built from the
schema). Each answer must be a refusal (never 2xx, never 5xx) in the error shape whose detail
does not carry the markers. /kstar/v1/sync is walked too: its remoteUrl points at a closed local
port, so a case the edge failed to refuse could not reach another machine."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from hivemem.stack import Stack
from tests.integration.support import http

pytestmark = pytest.mark.integration

MARK = "zq7marker"
# (name, in a URL (percent-encoded), in a JSON body (escaped text, or raw bytes))
HOSTILE = (("nul", "%00", "\\u0000"), ("surrogate", "%ED%A0%80", "\\ud800"), ("not-utf8", "%FF", b"\xff"))
SLOT = "\u2603slot\u2603"  # stands for the hostile text in a body until it is spliced in as JSON
CLOSED_PORT_URL = "https://127.0.0.1:9/"


@dataclass(frozen=True)
class Case:
    method: str
    template: str
    where: str  # "path claw_id", "query traceId", "body summary", ...
    hostile: str
    url: str
    body: bytes | None
    headers: dict[str, Any]

    def __str__(self) -> str:
        return f"{self.method.upper()} {self.template} [{self.where}, {self.hostile}]"


def test_every_operation_refuses_hostile_text_without_echoing_it(stack: Stack) -> None:
    spec = httpx.get(f"{stack.api_url}/openapi.json", timeout=30).json()
    cases = list(_cases(spec))
    operations = {(c.method, c.template) for c in cases}
    assert len(operations) >= 60, len(operations)  # every operation with an input (of 71 today)
    failures: list[str] = []
    with http(stack, "kstar-a", claw="claw-walk") as h:
        for case in cases:
            r = h.request(case.method, case.url, content=case.body, headers=case.headers)
            problem = _judge(case, r)
            if problem:
                failures.append(f"{case}: {problem}")
    assert not failures, f"{len(failures)} of {len(cases)} cases:\n" + "\n".join(failures[:60])


def test_headers_with_nul_or_invalid_bytes_are_never_5xx(stack: Stack) -> None:
    host, port = stack.settings.api_host, stack.settings.api_port
    routes = (b"/api/v1/claws", b"/kstar/v1/stats", b"/caml/v1/operators/me", b"/healthz", b"/mcp")
    for route in routes:
        for header in (b"Authorization: Bearer " + MARK.encode() + b"\x00" + MARK.encode(),
                       b"Authorization: Bearer " + MARK.encode() + b"\xff" + MARK.encode(),
                       b"X-Anything: " + MARK.encode() + b"\xff\x00" + MARK.encode(),
                       b"Content-Type: application/json\xff"):  # fmt: skip
            status, body = _raw(host, port, b"GET " + route + b" HTTP/1.1\r\nHost: x\r\n" + header + b"\r\n")
            assert status < 500, (route, header, status, body)
            if status >= 400:
                assert set(json.loads(body)) == {"code", "detail"} and MARK.encode() not in body, (route, header, body)


def test_mcp_refuses_hostile_text_without_500(stack: Stack) -> None:
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    calls = (("/mcp", "proposal_status", "proposalId"), ("/mcp", "fact_as_of", "factKey"),
             ("/mcp/kstar", "get_token_lineage", "token_id"),
             ("/mcp/kstar", "verify_control_token", "scope"))  # fmt: skip
    with http(stack, "kstar-a", claw="claw-walk") as h:
        for endpoint, tool, field in calls:
            for _, _, escaped in HOSTILE:
                if isinstance(escaped, bytes):
                    continue  # a JSON-RPC body that is not UTF-8 is the SDK's parse error, below
                args = {"token_id": "t", "scope": "s", field: SLOT}
                call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}}
                r = h.post(endpoint, content=_splice(call, MARK + escaped + MARK), headers=accept)
                assert r.status_code < 500, (endpoint, tool, escaped, r.status_code, r.text)
                assert MARK not in r.text, (endpoint, tool, r.text)
                if r.status_code == 200:  # a JSON-RPC answer: the tool refused
                    result = r.json().get("result") or {}
                    assert result.get("isError") or "error" in r.json(), (endpoint, tool, r.text)
            r = h.post(endpoint + "?x=" + MARK + "%00", content=b"{}", headers=accept)
            _shape(r, 422, "INVALID_REQUEST")
            r = h.post(endpoint, content=b'{"jsonrpc": "2.0", "id": 1, "method": "\xff"}', headers=accept)
            assert r.status_code < 500, (endpoint, r.status_code, r.text)


# ------------------------------------------------------------------------------------------------- the walk


def _cases(spec: dict[str, Any]) -> Iterator[Case]:
    comps = spec["components"]["schemas"]
    for template, ops in spec["paths"].items():
        for method, op in ops.items():
            params = op.get("parameters", [])
            body_schema = _body_schema(op, comps)
            if not params and body_schema is None:
                continue  # nothing to carry text: /healthz, /metrics, /clam/v1/mind, ...
            values = {p["name"]: _valid(p["schema"], comps, p["name"]) for p in params}
            body = _valid(body_schema, comps, "") if body_schema is not None else None
            if isinstance(body, dict) and template == "/kstar/v1/sync":
                body["remoteUrl"] = CLOSED_PORT_URL
            targets = [(p["in"], p["name"]) for p in params] + [("body", f) for f in _string_fields(body_schema, comps)]
            targets += [("query", MARK + "name")]  # a parameter the route does not know, hostile in its name
            if body_schema is not None:
                targets.append(("body", None))  # a hostile key
            for kind, name in targets:
                for hostile, encoded, escaped in HOSTILE:
                    yield _case(method, template, params, values, body, kind, name, hostile, encoded, escaped)


def _case(method: str, template: str, params: list[dict[str, Any]], values: dict[str, Any], body: Any, kind: str,
          name: str | None, hostile: str, encoded: str, escaped: str | bytes) -> Case:  # fmt: skip
    url = template
    query: list[str] = []
    headers: dict[str, Any] = {"content-type": "application/json"} if body is not None else {}
    bad_url = MARK + encoded + MARK
    for p in params:
        mine = (kind, name) == (p["in"], p["name"])
        value = bad_url if mine else quote(_text(values[p["name"]]), safe="")
        if p["in"] == "path":
            url = url.replace("{" + p["name"] + "}", value)
        elif p["in"] == "query":
            query.append(f"{p['name']}={value}")
        elif p["in"] == "header":
            raw = (MARK + "\xff" + MARK).encode("latin-1") if mine else _text(values[p["name"]]).encode()
            headers[p["name"]] = raw  # httpx cannot send NUL in a header: see the raw-socket test
    if kind == "query" and name == MARK + "name":
        query.append(f"{MARK}{encoded}name=1")
    if query:
        url += "?" + "&".join(query)
    raw_body = None
    if body is not None:
        doc = body
        if kind == "body" and name is not None:
            doc = {**body, name: [SLOT] if _is_list_field(name, body) else SLOT}
        elif kind == "body":
            doc = {**body, SLOT: "x"}
        raw_body = _splice(doc, (MARK + escaped + MARK) if isinstance(escaped, str) else escaped)
    return Case(method, template, f"{kind} {name}", hostile, url, raw_body, headers)


def _splice(doc: Any, hostile: str | bytes) -> bytes:
    """``doc`` as JSON bytes with ``SLOT`` replaced by hostile escaped text, or by raw bytes."""
    text = json.dumps(doc).encode()
    slot = json.dumps(SLOT)[1:-1].encode()
    if isinstance(hostile, bytes):
        return text.replace(slot, MARK.encode() + hostile + MARK.encode())
    return text.replace(slot, hostile.encode())


def _judge(case: Case, r: httpx.Response) -> str | None:
    if r.status_code >= 500 or r.status_code < 400:
        return f"answered {r.status_code}: {r.text[:300]}"
    try:
        body = r.json()
    except ValueError:
        return f"{r.status_code} not JSON: {r.text[:200]}"
    if not (isinstance(body, dict) and set(body) == {"code", "detail"} and isinstance(body["detail"], str)):
        return f"not the error shape: {r.text[:300]}"
    if MARK in body["detail"] or MARK in r.text:
        return f"the detail carries the submitted text: {body['detail'][:300]}"
    expected = _expected(case)
    if (r.status_code, body["code"]) not in expected:
        return f"{r.status_code} {body['code']} ({body['detail'][:200]}), expected one of {sorted(expected)}"
    return None


def _expected(case: Case) -> set[tuple[int, str]]:
    if case.where.startswith("header"):
        return {(422, "INVALID_REQUEST"), (401, "AUTH_INVALID")}
    if case.where.startswith("body"):
        if case.hostile == "not-utf8":
            return {(400, "BAD_REQUEST")}  # a body that cannot be read at all
        return {(422, "INVALID_FIELD" if case.template == "/api/v1/envelopes" else "INVALID_REQUEST")}
    return {(422, "INVALID_REQUEST")}


# ------------------------------------------------------------------------------------------------- schemas


def _resolve(schema: dict[str, Any], comps: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = comps[schema["$ref"].rsplit("/", 1)[-1]]
    options = [o for o in schema.get("anyOf", schema.get("oneOf", [])) if o.get("type") != "null"]
    if options:
        rest = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
        return {**_resolve(options[0], comps), **rest}
    return schema


def _body_schema(op: dict[str, Any], comps: dict[str, Any]) -> dict[str, Any] | None:
    content = op.get("requestBody", {}).get("content", {})
    return _resolve(content["application/json"]["schema"], comps) if "application/json" in content else None


def _string_fields(schema: dict[str, Any] | None, comps: dict[str, Any]) -> list[str]:
    """Top-level properties that hold text (or a list of it, or anything); for a body that is a free
    JSON object, one field of our own naming."""
    if schema is None:
        return []
    props = schema.get("properties", {})
    if not props:
        return ["content"]  # a free document (KSTAR records): the hostile text is one of its fields
    out = []
    for name, prop in props.items():
        s = _resolve(prop, comps)
        items = _resolve(s.get("items", {}), comps) if s.get("type") == "array" else {}
        if s.get("type") in ("string", None) or items.get("type") == "string":
            out.append(name)
    return out


def _is_list_field(name: str, body: Any) -> bool:
    return isinstance(body, dict) and isinstance(body.get(name), list)


def _valid(schema: dict[str, Any], comps: dict[str, Any], name: str) -> Any:
    """A value the schema accepts: its default, first enum member or example, else the smallest one."""
    s = _resolve(schema, comps)
    if s.get("default") is not None:
        return s["default"]
    if s.get("enum"):
        return s["enum"][0]
    if s.get("examples"):
        return s["examples"][0]
    kind = s.get("type")
    if kind == "string":
        if s.get("format") == "date-time":
            return "2026-01-01T00:00:00Z"
        if "\\d{4}-\\d{2}-\\d{2}" in s.get("pattern", ""):
            return "2026-01-01"
        return "walk" + "x" * max(0, s.get("minLength", 1) - 4)
    if kind in ("integer", "number"):
        low = s.get("minimum", 1)
        return min(max(low, 1), s.get("maximum", low + 1))
    if kind == "boolean":
        return False
    if kind == "array":
        return [_valid(s.get("items", {}), comps, name) for _ in range(s.get("minItems", 0))]
    if kind == "object" or "properties" in s:
        return {k: _valid(v, comps, k) for k, v in s.get("properties", {}).items() if k in s.get("required", [])}
    return "walk"


def _text(value: Any) -> str:
    return json.dumps(value) if isinstance(value, bool) else str(value)


# ------------------------------------------------------------------------------------------------- raw HTTP


def _raw(host: str, port: int, head: bytes) -> tuple[int, bytes]:
    with socket.create_connection((host, port), timeout=10) as s:
        s.sendall(head + b"Connection: close\r\n\r\n")
        raw = b""
        while chunk := s.recv(65536):
            raw += chunk
    first, _, body = raw.partition(b"\r\n\r\n")
    return int(first.split(b" ")[1]), body


def _shape(r: httpx.Response, status: int, code: str) -> None:
    assert r.status_code == status, (r.status_code, r.text)
    body = r.json()
    assert set(body) == {"code", "detail"} and body["code"] == code and MARK not in body["detail"], body
