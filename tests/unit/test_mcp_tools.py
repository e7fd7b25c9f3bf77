"""The MCP tool table: every tool is an API route with that route's own request model, so MCP and
HTTP take the same input; arguments become the same request an HTTP caller would send."""

from __future__ import annotations

import asyncio
import json

import httpx
from fastapi.routing import APIRoute

from contracts.topics import TopicNames
from projections.http.app import create_app
from projections.http.context import ApiDeps
from projections.mcp.server import call, request_of
from projections.mcp.tools import BY_NAME, TOOLS

KERNEL = ("kernel_ingest", "kernel_write_memory", "kernel_wake", "kernel_ask", "kernel_goto", "kernel_near",
          "kernel_rewind", "kernel_forward", "kernel_trace", "kernel_inspect")  # fmt: skip


def routes() -> dict[tuple[str, str], APIRoute]:
    """The real app's routes (nothing connects before its lifespan starts)."""
    deps = ApiDeps(app_db_url="postgresql://unused@127.0.0.1:1/none", token_secret=b"x" * 32, tenants={},
                   names=TopicNames(), publisher=None, kafka_ok=lambda: False,  # type: ignore[arg-type]
                   projection_lag=dict, watermarks=lambda _: {}, projection_topics={})  # fmt: skip
    out: dict[tuple[str, str], APIRoute] = {}
    app = create_app(deps)
    # FastAPI keeps included routers whole; their own routes are under original_router.
    flat = [x for r in app.routes for x in getattr(getattr(r, "original_router", None), "routes", [r])]
    for r in flat:
        if isinstance(r, APIRoute):
            for m in r.methods or ():
                out[(m, r.path.replace(":path", ""))] = r
    return out


def test_names_are_unique_and_kernel_tools_are_all_there() -> None:
    assert len(BY_NAME) == len(TOOLS)
    assert set(KERNEL) <= set(BY_NAME)
    assert {"propose", "vote", "proposal_status", "fact_as_of", "find_claws", "caml_observe", "caml_recall",
            "caml_validate", "memory_add", "memory_search", "memory_ask"} <= set(BY_NAME)  # fmt: skip


def test_each_post_tool_takes_its_routes_body_model() -> None:
    known = routes()
    checked = 0
    for t in TOOLS:
        route = known.get((t.method, t.path))
        if route is None or t.method != "POST" or t.body is not None:
            continue
        assert route.body_field is not None
        assert route.body_field.field_info.annotation is t.model, t.name  # type: ignore[union-attr]
        assert t.input_schema() == t.model.model_json_schema(by_alias=True)
        checked += 1
    assert checked == 16  # CAML 3, KMMS 3, KMP 10


def test_arguments_become_the_http_request() -> None:
    assert request_of(BY_NAME["fact_as_of"], {"factKey": "db/primary", "asOf": "2026-01-01T00:00:00Z"}) == (
        "/api/v1/facts/db%2Fprimary", {"asOf": "2026-01-01T00:00:00Z"}, None)  # fmt: skip
    assert request_of(BY_NAME["vote"], {"proposalId": "p1", "vote": "YES"}) == (
        "/api/v1/envelopes", {}, {"type": "vote", "payload": {"proposalId": "p1", "vote": "YES"}})  # fmt: skip
    assert request_of(BY_NAME["kernel_wake"], {"about": "inc-1"}) == ("/kmp/v1/wake", {}, {"about": "inc-1"})


def test_api_errors_come_back_as_tool_errors_with_the_same_code() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"] == "Bearer tok"
        return httpx.Response(422, json={"code": "ABOUTS_REQUIRED", "detail": "scope ABOUTS needs a list"})

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="http://x") as client:
            res = await call(client, "tok", "kernel_ask", {"question": "q", "scope": {"mode": "ABOUTS"}})
            assert res.isError and res.structuredContent == {"status": 422, "code": "ABOUTS_REQUIRED",
                                                             "detail": "scope ABOUTS needs a list"}  # fmt: skip
            assert json.loads(res.content[0].text)["code"] == "ABOUTS_REQUIRED"  # type: ignore[union-attr]
            missing = await call(client, None, "kernel_ask", {})
            assert missing.isError and missing.structuredContent is not None
            assert missing.structuredContent["code"] == "AUTH_MISSING"
            unknown = await call(client, "tok", "nope", {})
            assert unknown.structuredContent is not None and unknown.structuredContent["code"] == "UNKNOWN_TOOL"

    asyncio.run(go())
