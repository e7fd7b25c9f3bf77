"""The MCP servers (official ``mcp`` SDK, its low-level ``Server``): each lists the tools of its table
and runs each call as the HTTP request it stands for (``bridge.py``) with the caller's bearer token,
so tenant, claw, validation and reason codes are exactly the HTTP API's. Two tables, two servers
(``SERVERS``): ``hivemem`` (``tools.py``) and ``kstar`` (``kstar_tools.py``, seed 003's tool names).

- stdio (``hivemem mcp --api URL [--server kstar]``, ``stdio.py``): calls go over the network to a running API with
  the token given at start (``--token`` or ``HIVEMEM_TOKEN``).
- streamable HTTP (``/mcp`` and ``/mcp/kstar`` on the API, ``http_mount.py``): calls go in-process to the same app
  (``httpx.ASGITransport``) with the ``Authorization`` header of the MCP request itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import httpx
import mcp.types as types
from mcp.server import Server, ServerRequestContext

from projections.mcp import kstar_tools
from projections.mcp.bridge import call
from projections.mcp.tools import TOOLS, ToolSpec

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


@dataclass(frozen=True)
class ServerSpec:
    """One MCP server: its name (what hosts prefix tools with, ``mcp__<name>__<tool>``), tools and instructions."""

    name: str
    tools: tuple[ToolSpec, ...]
    instructions: str


SERVERS: dict[str, ServerSpec] = {
    SERVER_NAME: ServerSpec(SERVER_NAME, TOOLS, INSTRUCTIONS),
    kstar_tools.SERVER_NAME: ServerSpec(kstar_tools.SERVER_NAME, kstar_tools.TOOLS, kstar_tools.INSTRUCTIONS),
}


def tool_list(tools: Sequence[ToolSpec] = TOOLS) -> list[types.Tool]:
    return [types.Tool(name=t.name, description=t.description, input_schema=t.input_schema) for t in tools]


def build_server(client: httpx.AsyncClient, authorization_of: AuthorizationOf, name: str = SERVER_NAME,
                 tools: Sequence[ToolSpec] = TOOLS, instructions: str = INSTRUCTIONS) -> Server[Any]:  # fmt: skip
    """An MCP server named ``name`` serving the table ``tools``, whose calls go to the API ``client``
    talks to, each with the ``Authorization`` header ``authorization_of`` gives for the request served."""
    by_name = {t.name: t for t in tools}
    if len(by_name) != len(tools):
        raise ValueError(f"{name}: MCP tool names must be unique")
    listed = types.ListToolsResult(tools=tool_list(tools))

    async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return listed

    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await call(client, authorization_of(ctx), params.name, params.arguments or {}, by_name)

    return Server(name, version=_version(), instructions=instructions, on_list_tools=list_tools,
                  on_call_tool=call_tool)  # fmt: skip


def build(client: httpx.AsyncClient, authorization_of: AuthorizationOf, server: str = SERVER_NAME) -> Server[Any]:
    """The server of ``SERVERS`` named ``server`` (``KeyError`` if there is none)."""
    spec = SERVERS[server]
    return build_server(client, authorization_of, name=spec.name, tools=spec.tools, instructions=spec.instructions)


def authorization_of_request(ctx: Ctx) -> str | None:
    """The ``Authorization`` header of the MCP HTTP request being served (``/mcp`` checked it)."""
    request = ctx.request
    headers = getattr(request, "headers", None)
    return headers.get("authorization") if headers is not None else None
