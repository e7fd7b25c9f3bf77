"""The MCP tool table: every tool is an API route whose own request models give the tool's input
schema; arguments become the request an HTTP caller would send; an API refusal becomes a tool
error with the same status, code and detail; /mcp refuses a missing or bad token before MCP runs."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from pydantic.alias_generators import to_snake
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from contracts.topics import TopicNames
from governance.identity import TenantPolicy
from projections.api import create_app
from projections.auth import mint_token
from projections.gate.gateway import EnvelopeIn
from projections.http.context import ApiDeps
from projections.mcp.bridge import HttpCall, ToolInputError, call, request_of
from projections.mcp.http_mount import McpEndpoint
from projections.mcp.server import tool_list
from projections.mcp.tools import BY_NAME, TOOLS, ToolSpec

KERNEL = ("kernel_ingest", "kernel_write_memory", "kernel_wake", "kernel_ask", "kernel_goto", "kernel_near",
          "kernel_rewind", "kernel_forward", "kernel_trace", "kernel_inspect")  # fmt: skip
NAMED = ("propose", "vote", "proposal_status", "fact_as_of", "find_claws", "caml_observe", "caml_recall",
         "caml_validate", "memory_add", "memory_search", "memory_ask")  # fmt: skip


def app() -> FastAPI:
    """The real app (nothing connects before its lifespan starts)."""
    deps = ApiDeps(app_db_url="postgresql://unused@127.0.0.1:1/none", token_secret=b"x" * 32, tenants={},
                   names=TopicNames(), publisher=None, kafka_ok=lambda: False,  # type: ignore[arg-type]
                   projection_lag=dict, watermarks=lambda _: {}, projection_topics={})  # fmt: skip
    return create_app(deps)


def routes() -> dict[tuple[str, str], APIRoute]:
    # FastAPI keeps included routers whole; their own routes are under original_router.
    flat = [x for r in app().routes for x in getattr(getattr(r, "original_router", None), "routes", [r])]
    return {(m, r.path.replace(":path", "")): r for r in flat if isinstance(r, APIRoute) for m in r.methods or ()}


def route_params(dep: Dependant) -> set[str]:
    """The path and query parameter names of a route, its dependencies' included, in snake_case:
    routes declare query parameters camelCase (``waitMs``) and read the snake_case spelling a tool
    sends (``wait_ms``) as the same (projections/http/query_names.py)."""
    own = {to_snake(p.alias) for p in [*dep.path_params, *dep.query_params]}
    return own.union(*(route_params(d) for d in dep.dependencies))


def without_params(spec: ToolSpec) -> dict[str, Any]:
    schema = json.loads(json.dumps(spec.input_schema))
    for arg in spec.query_fields().values():
        schema["properties"].pop(arg)
    return schema


def test_names_are_unique_and_every_tool_is_there() -> None:
    assert len(BY_NAME) == len(TOOLS) == len({t.name for t in tool_list()})
    assert set(NAMED) | set(KERNEL) <= set(BY_NAME)


def test_every_tool_is_a_route_and_takes_its_models() -> None:
    known = routes()
    for t in TOOLS:
        route = known.get((t.method, t.path))
        assert route is not None, f"{t.name}: no route {t.method} {t.path}"
        params = route_params(route.dependant)
        assert set(t.query_fields()) <= params, t.name  # every parameter the tool takes, the route takes
        if t.method == "GET":
            assert set(t.query_fields()) == params, t.name  # ... and a GET tool takes all of them
        assert set(t.path_params()) <= set(t.query_fields()), t.name
        assert t.input_schema["type"] == "object"
        if t.body is None:
            assert route.body_field is None, t.name
            continue
        assert route.body_field is not None
        model = route.body_field.field_info.annotation
        assert model is (EnvelopeIn if t.envelope else t.body), t.name
        assert without_params(t) == t.body.model_json_schema(by_alias=True), t.name


def no_defaults(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: no_defaults(v) for k, v in node.items() if k != "default"}
    return [no_defaults(v) for v in node] if isinstance(node, list) else node


def test_envelope_tools_take_the_payload_the_envelope_route_documents_for_the_type() -> None:
    doc = app().openapi()["components"]["schemas"]["EnvelopeIn"]["oneOf"]
    branches = {b["properties"]["type"]["const"]: b for b in doc}
    for name, kind in (("propose", "proposal"), ("vote", "vote")):
        assert BY_NAME[name].envelope == kind
        # The document drops the defaults (null); everything else is the same schema.
        assert no_defaults(BY_NAME[name].input_schema) == no_defaults(branches[kind]["properties"]["payload"])
    assert {"proposalId", "factKey", "statement", "deadline"} <= set(BY_NAME["propose"].input_schema["required"])


def test_parameters_are_camel_case_arguments_sent_under_the_routes_names() -> None:
    fact = BY_NAME["fact_as_of"]
    assert set(fact.input_schema["properties"]) == {"factKey", "asOf", "consistency", "waitMs"}
    assert fact.input_schema["required"] == ["factKey"]
    assert request_of(fact, {"factKey": "db/primary", "asOf": "2026-01-01T00:00:00Z"}) == HttpCall(
        "GET", "/api/v1/facts/db%2Fprimary", {"as_of": "2026-01-01T00:00:00Z"}, None)  # fmt: skip
    assert request_of(BY_NAME["proposal_status"], {"proposal_id": "p 1", "consistency": "t:0:1", "waitMs": 250}) == (
        HttpCall("GET", "/api/v1/proposals/p%201", {"consistency": "t:0:1", "wait_ms": "250"}, None))  # fmt: skip
    assert request_of(BY_NAME["find_claws"], {}) == HttpCall("GET", "/api/v1/claws", {}, None)
    assert request_of(BY_NAME["vote"], {"proposalId": "p1", "vote": "YES"}) == HttpCall(
        "POST", "/api/v1/envelopes", {}, {"type": "vote", "payload": {"proposalId": "p1", "vote": "YES"}})  # fmt: skip
    assert request_of(BY_NAME["memory_add"], {"content": "hi", "waitMs": 0}) == HttpCall(
        "POST", "/api/v1/memory/episodes", {"wait_ms": "0"}, {"content": "hi"})  # fmt: skip
    # The body goes as it is: the API validates it (unknown fields, types) with its own codes.
    assert request_of(BY_NAME["kernel_wake"], {"about": "inc-1", "x": 1}).body == {"about": "inc-1", "x": 1}


@pytest.mark.parametrize(("name", "args", "says"), [
    ("proposal_status", {}, "proposalId is required"),
    ("proposal_status", {"proposalId": ""}, "proposalId is required"),
    ("fact_as_of", {"factKey": 7}, "factKey is required"),
    ("find_claws", {"capability": "logs.read", "limit": 3}, "unknown argument(s) ['limit']"),
    ("find_claws", {"capability": ["a"]}, "capability: a parameter is"),
])  # fmt: skip
def test_what_cannot_be_a_request_is_refused(name: str, args: dict[str, Any], says: str) -> None:
    with pytest.raises(ToolInputError, match=r".*") as exc:
        request_of(BY_NAME[name], args)
    assert says in str(exc.value)


def test_api_answers_come_back_as_tool_results_with_the_same_code() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"] == "Bearer tok"
        if request.url.path == "/kmp/v1/ask":
            return httpx.Response(422, json={"code": "ABOUTS_REQUIRED", "detail": "scope ABOUTS needs a list"})
        if request.url.path == "/api/v1/claws":
            return httpx.Response(200, text='[{"clawId": "c1"}]', headers={"content-type": "application/json"})
        raise httpx.ConnectError("refused")

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="http://x") as client:
            res = await call(client, "Bearer tok", "kernel_ask", {"question": "q", "scope": {"mode": "ABOUTS"}})
            assert res.is_error and res.structured_content == {"status": 422, "code": "ABOUTS_REQUIRED",
                                                               "detail": "scope ABOUTS needs a list"}  # fmt: skip
            assert json.loads(res.content[0].text) == res.structured_content  # type: ignore[union-attr]
            ok = await call(client, "Bearer tok", "find_claws", {})
            assert not ok.is_error and ok.structured_content == {"result": [{"clawId": "c1"}]}
            assert ok.content[0].text == '[{"clawId": "c1"}]'  # type: ignore[union-attr]
            down = await call(client, "Bearer tok", "kernel_wake", {"about": "a"})
            assert down.is_error and down.structured_content["code"] == "API_UNAVAILABLE"
            missing = await call(client, None, "kernel_ask", {})
            assert missing.is_error and missing.structured_content["code"] == "AUTH_MISSING"
            unknown = await call(client, "Bearer tok", "nope", {})
            assert unknown.structured_content == {"status": 404, "code": "UNKNOWN_TOOL",
                                                  "detail": "no tool 'nope'; tools/list names them"}  # fmt: skip
            bad = await call(client, "Bearer tok", "proposal_status", {})
            assert bad.structured_content["code"] == "INVALID_REQUEST"

    asyncio.run(go())


def test_the_http_endpoint_checks_the_token_and_forwards_it() -> None:
    """/mcp over a stand-in API: 401/403 in the API's error shape before MCP runs; a call reaches
    the API with the MCP request's own Authorization header."""
    secret = b"s" * 32

    async def proposal(request: Request) -> JSONResponse:
        return JSONResponse({"proposalId": request.path_params["pid"], "auth": request.headers["authorization"]})

    api = Starlette(routes=[Route("/api/v1/proposals/{pid}", proposal)])
    endpoint = McpEndpoint(api, secret, {"acme": TenantPolicy("acme", {})})
    app = Starlette(routes=[Route("/mcp", endpoint, methods=["GET", "POST", "DELETE"])])
    token = mint_token(secret, "acme", "t", "claw-1")
    accept = {"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-11-25"}

    def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}

    async def go() -> None:
        async with endpoint.running(), httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                                         base_url="http://t") as c:  # fmt: skip
            r = await c.post("/mcp", json=rpc("tools/list", {}), headers=accept)
            assert (r.status_code, r.json()["code"]) == (401, "AUTH_MISSING")
            r = await c.post("/mcp", json=rpc("tools/list", {}), headers={**accept, "Authorization": "Bearer junk"})
            assert (r.status_code, r.json()["code"]) == (401, "AUTH_INVALID")
            stranger = {**accept, "Authorization": f"Bearer {mint_token(secret, 'globex', 't')}"}
            r = await c.post("/mcp", json=rpc("tools/list", {}), headers=stranger)
            assert (r.status_code, r.json()["code"]) == (403, "UNKNOWN_TENANT")
            auth = {**accept, "Authorization": f"Bearer {token}"}
            r = await c.post("/mcp", json=rpc("tools/list", {}), headers=auth)
            assert r.status_code == 200, r.text
            assert {t["name"] for t in r.json()["result"]["tools"]} == set(BY_NAME)
            status = rpc("tools/call", {"name": "proposal_status", "arguments": {"proposalId": "p-9"}})
            r = await c.post("/mcp", json=status, headers=auth)
            result = r.json()["result"]
            assert result["isError"] is False
            assert result["structuredContent"] == {"proposalId": "p-9", "auth": f"Bearer {token}"}

    asyncio.run(go())
