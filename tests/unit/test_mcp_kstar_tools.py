"""The ``kstar`` MCP server (X-25): exactly the union of seed 003's MCP tools and manifest capabilities,
each a ``/kstar/v1/*`` route of the app taking all of that route's parameters; snake_case arguments with
the seed's required fields; record schemas that mirror the seed shapes ``governance/kstar/records.py``
validates; aliases that are the same route; served at /mcp/kstar under the name "kstar"."""

from __future__ import annotations

import asyncio
import typing
from typing import Any

import httpx
import pytest
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from governance.identity import TenantPolicy
from governance.kstar.records import KIND_MODELS
from projections.auth import mint_token
from projections.http import kstar_models as km
from projections.mcp import kstar_tools as kt
from projections.mcp.bridge import HttpCall, ToolInputError, call, request_of
from projections.mcp.http_mount import McpEndpoint
from projections.mcp.server import SERVERS, build, tool_list
from projections.mcp.tools import BY_NAME as HIVEMEM_TOOLS
from tests.unit.test_mcp_tools import app, route_params, routes

X25 = ("store_trace", "query_memory", "query_traces", "store_perception", "store_fact", "store_skill", "update_skill",
       "update_skill_maturity", "store_control_token", "verify_control_token", "revoke_control_token",
       "get_token_lineage", "export_memory", "export_bundle", "import_bundle")  # fmt: skip
REQUIRED = {"store_trace": {"situation", "task", "action"}, "store_perception": {"content"},
            "store_fact": {"schema", "data"}, "store_skill": {"name", "definition"},
            "update_skill": {"skill_name", "outcome"}, "store_control_token": {"token_type", "scope"},
            "verify_control_token": {"token_id", "scope"}, "revoke_control_token": {"token_id", "reason"},
            "get_token_lineage": {"token_id"}, "import_bundle": {"bundle"}}  # fmt: skip
RECORD_TOOLS = {"store_trace": "trace", "store_perception": "perception", "store_fact": "fact", "store_skill": "skill"}
FILLED = {"id", "timestamp", "created_at", "updated_at"}  # the route or the processor fills them
OURS = {"successes"}  # records.py's addition to the seed, not offered to a model
CHOSEN = (kt.QUERY_TRACES, kt.SEARCH_TRACES, kt.QUERY_PERCEPTIONS, kt.QUERY_FACTS)


def test_the_tools_are_exactly_the_x25_union_on_a_server_named_kstar() -> None:
    assert tuple(t.name for t in kt.TOOLS) == X25
    assert {t.name for t in tool_list(kt.TOOLS)} == set(X25) == set(kt.BY_NAME)
    assert SERVERS["kstar"].name == kt.SERVER_NAME == "kstar" and SERVERS["kstar"].tools == kt.TOOLS
    assert not set(X25) & set(HIVEMEM_TOOLS)  # two servers, two tables
    server = build(httpx.AsyncClient(), lambda _: None, "kstar")
    assert server.name == "kstar"
    assert build(httpx.AsyncClient(), lambda _: None).name == "hivemem"


def test_every_tool_is_a_kstar_route_and_takes_all_its_parameters() -> None:
    known = routes()
    for t in (*kt.TOOLS, *CHOSEN):
        route = known.get((t.method, t.path))
        assert route is not None and t.path.startswith("/kstar/v1/"), f"{t.name}: no route {t.method} {t.path}"
        assert set(t.query_fields()) == route_params(route.dependant), t.path
        assert set(t.path_params()) <= set(t.query_fields()), t.name
        assert "memory" in t.input_schema["properties"], t.name
        assert t.input_schema["type"] == "object"
        if t.body is None:
            assert route.body_field is None, t.name
            continue
        assert route.body_field is not None, t.name
        model = route.body_field.field_info.annotation
        if t.name in RECORD_TOOLS:
            assert model == dict[str, Any], t.name  # a record: a free JSON object the route validates
        elif t.name == "store_control_token":
            assert model is km.TokenIn  # the seed's {token_type*, scope*}: what TokenIn issues from
            assert set(t.body.model_fields) <= set(km.TokenIn.model_fields)
        elif t.name != "query_memory":
            assert model is t.body, t.name  # the route's own model, listed by field name
    for t in kt.TOOLS:  # the seed's snake_case arguments, never the routes' camelCase aliases
        assert all(p == p.lower() for p in t.input_schema["properties"]), t.name


def test_required_arguments_are_the_seeds() -> None:
    for name, required in REQUIRED.items():
        assert set(kt.BY_NAME[name].input_schema["required"]) == required, name
    for name in ("query_memory", "query_traces", "export_memory"):
        assert "required" not in kt.BY_NAME[name].input_schema, name
    schema = kt.BY_NAME["query_traces"].input_schema["properties"]
    assert (schema["limit"]["default"], schema["offset"]["default"]) == (100, 0)
    export = kt.BY_NAME["export_memory"].input_schema["properties"]
    assert export["include_tokens"]["default"] is False and export["types"]


def test_aliases_are_the_same_route() -> None:
    assert kt.ALIASES == {"update_skill_maturity": "update_skill", "export_bundle": "export_memory"}
    for alias, name in kt.ALIASES.items():
        a, b = kt.BY_NAME[alias], kt.BY_NAME[name]
        assert (a.method, a.path, a.body, a.query, a.input_schema) == (b.method, b.path, b.body, b.query,
                                                                        b.input_schema)  # fmt: skip
        args = {"skill_name": "s", "outcome": True} if name == "update_skill" else {"include_tokens": True}
        assert request_of(a, args) == request_of(b, args)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):  # X | None, list[X], Literal[...] (no model there)
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _mirrors(mine: type[BaseModel], theirs: type[BaseModel], where: str) -> None:
    """Same field names (the seed's), the same required ones (bar what is filled), nested alike."""
    my_fields = {f.alias or n: f for n, f in mine.model_fields.items()}
    their_fields = {f.alias or n: f for n, f in theirs.model_fields.items()}
    assert set(my_fields) == set(their_fields) - OURS, where
    for key, field in my_fields.items():
        theirs_required = their_fields[key].is_required() and key not in FILLED
        assert field.is_required() == theirs_required, f"{where}.{key}"
        sub, their_sub = _model_in(field.annotation), _model_in(their_fields[key].annotation)
        assert (sub is None) == (their_sub is None), f"{where}.{key}"
        if sub is not None and their_sub is not None:
            _mirrors(sub, their_sub, f"{where}.{key}")


def test_record_schemas_mirror_the_records_the_route_validates() -> None:
    for name, kind in RECORD_TOOLS.items():
        body = kt.BY_NAME[name].body
        assert body is not None
        _mirrors(body, KIND_MODELS[kind], kind)
    props = kt.BY_NAME["store_fact"].input_schema["properties"]
    assert "schema" in props and "schema_name" not in props


def test_arguments_become_the_routes_request() -> None:
    by = kt.BY_NAME
    trace = {"situation": {"domain": "d"}, "task": {"goal": "g"}, "action": {"type": "t"}}
    assert request_of(by["store_trace"], {**trace, "memory": "c1/work", "wait_ms": 100}) == HttpCall(
        "POST", "/kstar/v1/traces", {"memory": "c1/work", "wait_ms": "100"}, trace)  # fmt: skip
    assert request_of(by["update_skill"], {"skill_name": "a/b", "outcome": False}) == HttpCall(
        "POST", "/kstar/v1/skills/a%2Fb/outcome", {}, {"outcome": False})  # fmt: skip
    assert request_of(by["revoke_control_token"], {"token_id": "tok-1", "reason": "r"}) == HttpCall(
        "POST", "/kstar/v1/tokens/tok-1/revoke", {}, {"reason": "r"})  # fmt: skip
    assert request_of(by["get_token_lineage"], {"token_id": "tok-1", "memory": "m"}) == HttpCall(
        "GET", "/kstar/v1/tokens/tok-1/lineage", {"memory": "m"}, None)  # fmt: skip
    assert request_of(by["store_control_token"], {"token_type": "session", "scope": "a:b"}).body == {
        "token_type": "session", "scope": "a:b"}  # fmt: skip
    with pytest.raises(ToolInputError, match="token_id is required"):
        request_of(by["get_token_lineage"], {})
    with pytest.raises(ToolInputError, match="skill_name is required"):
        request_of(by["update_skill"], {"outcome": True})


@pytest.mark.parametrize(("args", "path", "body"), [
    ({}, "/kstar/v1/traces/query", {}),
    ({"filters": {"result.success": True}, "limit": 5}, "/kstar/v1/traces/query",
     {"filters": {"result.success": True}, "limit": 5}),
    ({"kind": "traces", "query": "invoice", "limit": 3}, "/kstar/v1/traces/search", {"query": "invoice", "limit": 3}),
    ({"kind": "perceptions", "filters": {"subject": "s"}}, "/kstar/v1/perceptions/query",
     {"filters": {"subject": "s"}}),
    ({"kind": "facts", "schema": "edu", "path": "$.a", "value": 1}, "/kstar/v1/facts/query",
     {"schema": "edu", "path": "$.a", "value": 1}),
])  # fmt: skip
def test_query_memory_chooses_its_route(args: dict[str, Any], path: str, body: dict[str, Any]) -> None:
    assert request_of(kt.BY_NAME["query_memory"], {**args, "memory": "m"}) == HttpCall("POST", path, {"memory": "m"},
                                                                                        body)  # fmt: skip


def test_query_memory_refuses_an_unknown_kind() -> None:
    with pytest.raises(ToolInputError, match="kind: one of traces, perceptions, facts"):
        request_of(kt.BY_NAME["query_memory"], {"kind": "skills"})


def test_a_call_looks_the_tool_up_in_its_table() -> None:
    seen: list[tuple[str, str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.url.path))
        return httpx.Response(200, json={"valid": True, "reason": None})

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="http://x") as client:
            ok = await call(client, "Bearer t", "verify_control_token", {"token_id": "a", "scope": "b"}, kt.BY_NAME)
            assert not ok.is_error and ok.structured_content == {"valid": True, "reason": None}
            other = await call(client, "Bearer t", "kernel_ask", {}, kt.BY_NAME)
            assert other.structured_content is not None and other.structured_content["code"] == "UNKNOWN_TOOL"
            hivemem = await call(client, "Bearer t", "verify_control_token", {"token_id": "a", "scope": "b"})
            assert hivemem.structured_content is not None and hivemem.structured_content["code"] == "UNKNOWN_TOOL"

    asyncio.run(go())
    assert seen == [("POST", "/kstar/v1/tokens/verify")]


def test_the_app_mounts_the_kstar_server_at_mcp_kstar() -> None:
    paths = {getattr(r, "path", None): r for r in app().routes}
    assert isinstance(paths["/mcp/kstar"], Route) and isinstance(paths["/mcp"], Route)
    assert getattr(paths["/mcp/kstar"].endpoint, "manager", None) is not None


def test_the_kstar_endpoint_names_itself_kstar_and_serves_its_table() -> None:
    secret = b"s" * 32

    async def lineage(request: Request) -> JSONResponse:
        return JSONResponse([{"token_id": request.path_params["tid"], "memory": request.query_params["memory"]}])

    api = Starlette(routes=[Route("/kstar/v1/tokens/{tid}/lineage", lineage)])
    endpoint = McpEndpoint(api, secret, {"acme": TenantPolicy("acme", {})}, server="kstar")
    asgi = Starlette(routes=[Route("/mcp/kstar", endpoint, methods=["GET", "POST", "DELETE"])])
    auth = {"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-11-25",
            "Authorization": f"Bearer {mint_token(secret, 'acme', 't', 'claw-1')}"}  # fmt: skip

    def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}

    async def go() -> None:
        async with endpoint.running(), httpx.AsyncClient(transport=httpx.ASGITransport(app=asgi),
                                                         base_url="http://t") as c:  # fmt: skip
            init = rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": "t", "version": "1"}})  # fmt: skip
            r = await c.post("/mcp/kstar", json=init, headers=auth)
            assert r.status_code == 200, r.text
            assert r.json()["result"]["serverInfo"]["name"] == "kstar"
            r = await c.post("/mcp/kstar", json=rpc("tools/list", {}), headers=auth)
            assert [t["name"] for t in r.json()["result"]["tools"]] == list(X25)
            args = {"token_id": "tok 1", "memory": "claw-1"}
            r = await c.post("/mcp/kstar", json=rpc("tools/call", {"name": "get_token_lineage", "arguments": args}),
                             headers=auth)  # fmt: skip
            result = r.json()["result"]
            assert result["isError"] is False
            assert result["structuredContent"] == {"result": [{"token_id": "tok 1", "memory": "claw-1"}]}

    asyncio.run(go())
