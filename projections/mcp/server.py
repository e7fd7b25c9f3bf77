"""The MCP server (official ``mcp`` SDK, low-level server): lists the tools of ``tools.py`` and
runs each call as the HTTP request it stands for, with the caller's bearer token, so tenant, claw,
validation and reason codes are exactly the HTTP API's.

- stdio (``hivemem mcp --api URL``): calls go over the network to a running API with the token
  given at start (``--token`` or ``HIVEMEM_TOKEN``).
- streamable HTTP (``/mcp`` on the API): calls go in-process to the same app (``httpx.ASGITransport``)
  with the token of the MCP request's own ``Authorization`` header.

A refused call is an MCP tool error whose content is the API's ``{"status", "code", "detail"}``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx
import mcp.types as types
from mcp.server.lowlevel import Server
from pydantic.alias_generators import to_camel

from projections.mcp.tools import BY_NAME, TOOLS, ToolSpec

SERVER_NAME = "hivemem"
TokenOf = Callable[[Server[Any, Any]], str | None]


def request_of(spec: ToolSpec, args: dict[str, Any]) -> tuple[str, dict[str, str], dict[str, Any] | None]:
    """(path, query parameters, JSON body) for a tool call."""
    rest = dict(args)
    path = spec.path
    for name in [seg[1:-1] for seg in spec.path.split("/") if seg.startswith("{")]:
        value = rest.pop(name, rest.pop(to_camel(name), None))
        if not isinstance(value, str) or not value:
            raise ToolInputError(f"{to_camel(name)} is required")
        path = path.replace("{" + name + "}", quote(value, safe=""))
    params = {k: str(rest.pop(k)) for k in spec.query if rest.get(k) is not None}
    for k in spec.query:
        rest.pop(k, None)
    if spec.method == "GET":
        return path, params, None
    return path, params, spec.body(rest) if spec.body else rest


class ToolInputError(ValueError):
    pass


def _error(status: int, code: str, detail: str) -> types.CallToolResult:
    body = {"status": status, "code": code, "detail": detail}
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(body))],
                                structuredContent=body, isError=True)  # fmt: skip


async def call(client: httpx.AsyncClient, token: str | None, name: str, args: dict[str, Any]) -> types.CallToolResult:
    spec = BY_NAME.get(name)
    if spec is None:
        return _error(404, "UNKNOWN_TOOL", f"no tool {name!r}; list_tools names them")
    if token is None:
        return _error(401, "AUTH_MISSING", "no bearer token: start `hivemem mcp` with --token or HIVEMEM_TOKEN")
    try:
        path, params, body = request_of(spec, args)
    except ToolInputError as exc:
        return _error(422, "INVALID_FIELD", str(exc))
    resp = await client.request(spec.method, path, params=params, json=body,
                                headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    try:
        data: Any = resp.json()
    except ValueError:
        data = {"code": "BAD_RESPONSE", "detail": resp.text[:1000]}
    if resp.status_code >= 400:
        return _error(resp.status_code, str(data.get("code", "ERROR")), str(data.get("detail", "")))
    structured = data if isinstance(data, dict) else {"result": data}
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(data))],
                                structuredContent=structured, isError=False)  # fmt: skip


def build_server(client: httpx.AsyncClient, token_of: TokenOf) -> Server[Any, Any]:
    server: Server[Any, Any] = Server(SERVER_NAME, instructions="HiveMem: shared facts, collective memory (CAML), "
                                      "per-claw memory (KMMS) and process memory (KMP). See docs/mcp.md.")  # fmt: skip

    @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
    async def list_tools() -> list[types.Tool]:
        return [types.Tool(name=t.name, description=t.description, inputSchema=t.input_schema()) for t in TOOLS]

    # The API validates (same codes as HTTP); the SDK's own jsonschema check would answer differently.
    @server.call_tool(validate_input=False)  # type: ignore[untyped-decorator]
    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        return await call(client, token_of(server), name, arguments)

    return server


def bearer_of_request(server: Server[Any, Any]) -> str | None:
    """The token of the MCP HTTP request being served (its Authorization header)."""
    request = server.request_context.request
    header = request.headers.get("authorization", "") if request is not None else ""  # type: ignore[attr-defined]
    return header[7:].strip() if header.lower().startswith("bearer ") else None
