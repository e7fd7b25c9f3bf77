"""The HTTP API (FastAPI) and its entry points: one router per area (``projections.http``), the live
dashboard (``projections.dashboard``) and the MCP endpoints (``projections.mcp``) put together, one error
shape, the body cap. It sits above those three, which import ``projections.http``'s pieces, never this.

Every error is JSON ``{"code": ..., "detail": ...}`` with a stable code (see docs/http-api.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.concurrency import run_in_threadpool
from starlette.routing import Route

from projections.dashboard.routes import Dashboard
from projections.http import caml, clam, claws, envelopes, health, kmms, kmp, kstar, votes
from projections.http.context import DEFAULT_PROCESSORS, ApiDeps, Ctx
from projections.http.errors import install_error_handlers
from projections.http.limits import MAX_BODY_BYTES, BodyLimit
from projections.http.query_names import CamelQuery, refuse_unknown_query
from projections.http.request_count import RequestCount
from projections.http.server import serve
from projections.http.text_guard import TextGuard
from projections.mcp.http_mount import McpEndpoint

__all__ = ["DEFAULT_PROCESSORS", "ApiDeps", "create_app", "serve"]

MIN_LONG, MAX_LONG = -(2**63), 2**63 - 1
DESCRIPTION = f"""Event-sourced memory for fleets of AI agents.

Authenticate with `Authorization: Bearer <token>` (`hivemem token --tenant T [--claw C]`).
Every error is `{{"code": "...", "detail": "..."}}`; a refusal never repeats the submitted content.
A path, query or JSON body with NUL, invalid UTF-8 or a lone surrogate is 422 `INVALID_REQUEST`.
Request bodies are limited to {MAX_BODY_BYTES} bytes.
"""


def create_app(deps: ApiDeps) -> FastAPI:
    ctx = Ctx(deps)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await ctx.pool.open(wait=True, timeout=30)
        ctx.sync_pool.open()  # min_size 0: connects on first use
        async with mcp.running(), kstar_mcp.running():
            yield
        await dashboard.hub.close()
        await run_in_threadpool(ctx.sync_pool.close)
        await ctx.pool.close()

    app = FastAPI(title="HiveMem", version="0.1.0", description=DESCRIPTION, lifespan=lifespan)
    # MCP over streamable HTTP (docs/mcp.md): each tool call is served by this same app, in-process.
    # /mcp is the hivemem server, /mcp/kstar the kstar one (seed 003's tool names).
    mcp = McpEndpoint(app, deps.token_secret, deps.tenants)
    kstar_mcp = McpEndpoint(app, deps.token_secret, deps.tenants, server="kstar")
    for path, endpoint in (("/mcp", mcp), ("/mcp/kstar", kstar_mcp)):
        app.router.routes.append(Route(path, endpoint=endpoint, methods=["GET", "POST", "DELETE"],
                                       include_in_schema=False))  # fmt: skip
    install_error_handlers(app)

    # Innermost: each request counted by method, route and status (projections/http/request_count.py).
    app.add_middleware(RequestCount, counter=ctx.requests)
    # Query keys in snake_case read as their camelCase name (docs/http-api.md, "Naming").
    app.add_middleware(CamelQuery)
    # Text that is not text (NUL, invalid UTF-8, lone surrogates) in a path, query or JSON body: 422
    # before any route reads it (projections/http/text_guard.py). Inside BodyLimit, which caps what it reads.
    app.add_middleware(TextGuard)
    # Outermost (added last): an oversized body is refused before anything reads it.
    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)
    for area in (health, envelopes, claws, votes, caml, kmms, kmp, kstar, clam):
        app.include_router(area.router(ctx), dependencies=[Depends(refuse_unknown_query)])
    dashboard = Dashboard(ctx)  # the live dashboard (docs/dashboard.md): pushed over a WebSocket, not polled
    app.include_router(dashboard.router)
    _exact_bounds(app)
    return app


def _exact_bounds(app: FastAPI) -> None:
    """FastAPI's OpenAPI model holds ``minimum``/``maximum`` as floats, which turns the Avro long
    bound 2^63-1 into 2^63 (a value the server refuses). Give the document back integer bounds."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = generate()
            for node in _objects(document):
                for key in ("minimum", "maximum"):
                    value = node.get(key)
                    if isinstance(value, float) and value.is_integer():
                        node[key] = max(MIN_LONG, min(MAX_LONG, int(value)))
            _named_by_title(document)
        return app.openapi_schema  # type: ignore[return-value]

    app.openapi = openapi  # type: ignore[method-assign]


def _named_by_title(document: dict[str, Any]) -> None:
    """Pydantic names a parametrized model's schema ``SearchResult_int_``; the memory API's views are generic
    over their time type (``contracts/kmms_views.py``: ms on the server, datetimes in the SDK), so each such
    schema is renamed to its title (``SearchResult``) and every reference to it follows."""
    schemas = document.get("components", {}).get("schemas", {})
    titles = Counter(value.get("title") for value in schemas.values())
    renamed = {key: value["title"] for key, value in schemas.items()
               if isinstance(value.get("title"), str) and key.startswith(f"{value['title']}_") and key.endswith("_")
               and value["title"] not in schemas and titles[value["title"]] == 1}  # fmt: skip
    if not renamed:
        return
    for old, new in renamed.items():
        schemas[new] = schemas.pop(old)
    refs = {f"#/components/schemas/{old}": f"#/components/schemas/{new}" for old, new in renamed.items()}
    for node in _objects(document):
        if node.get("$ref") in refs:
            node["$ref"] = refs[node["$ref"]]


def _objects(node: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object in ``node`` (itself included), depth first; a caller may change their scalar values."""
    if isinstance(node, dict):
        yield node
        for child in node.values():
            yield from _objects(child)
    elif isinstance(node, list):
        for child in node:
            yield from _objects(child)
