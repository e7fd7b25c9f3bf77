"""The MCP server (official ``mcp`` SDK, its low-level ``Server``): lists the tools of ``tools.py``
and runs each call as the HTTP request it stands for (``bridge.py``) with the caller's bearer token,
so tenant, claw, validation and reason codes are exactly the HTTP API's.

- stdio (``hivemem mcp --api URL``, ``stdio.py``): calls go over the network to a running API with
  the token given at start (``--token`` or ``HIVEMEM_TOKEN``).
- streamable HTTP (``/mcp`` on the API, ``http_mount.py``): calls go in-process to the same app
  (``httpx.ASGITransport``) with the ``Authorization`` header of the MCP request itself.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import httpx
import mcp.types as types
from mcp.server import Server, ServerRequestContext

from projections.mcp.bridge import call
from projections.mcp.tools import TOOLS

SERVER_NAME = "hivemem"
INSTRUCTIONS = ("HiveMem: shared facts voted by a quorum (propose, vote, proposal_status, fact_as_of, find_claws), "
                "collective memory across operators (caml_*), your own memory (memory_*) and process memory "
                "(kernel_*). A refused call is an error whose content is {status, code, detail}.")  # fmt: skip
Ctx = ServerRequestContext[Any, Any]
AuthorizationOf = Callable[[Ctx], str | None]


def _version() -> str:
    try:
        return version("hivemem")
    except PackageNotFoundError:
        return "0"


def tool_list() -> list[types.Tool]:
    return [types.Tool(name=t.name, description=t.description, input_schema=t.input_schema) for t in TOOLS]


def build_server(client: httpx.AsyncClient, authorization_of: AuthorizationOf) -> Server[Any]:
    """An MCP server whose tool calls go to the API ``client`` talks to, each with the
    ``Authorization`` header ``authorization_of`` gives for the request being served."""
    listed = types.ListToolsResult(tools=tool_list())

    async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return listed

    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await call(client, authorization_of(ctx), params.name, params.arguments or {})

    return Server(SERVER_NAME, version=_version(), instructions=INSTRUCTIONS, on_list_tools=list_tools,
                  on_call_tool=call_tool)  # fmt: skip


def authorization_of_request(ctx: Ctx) -> str | None:
    """The ``Authorization`` header of the MCP HTTP request being served (``/mcp`` checked it)."""
    request = ctx.request
    headers = getattr(request, "headers", None)
    return headers.get("authorization") if headers is not None else None
