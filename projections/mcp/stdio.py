"""``hivemem mcp``: the MCP server over stdio, calling a running HiveMem API with one token."""

from __future__ import annotations

import httpx
from mcp.server.stdio import stdio_server

from projections.mcp.server import build_server


async def serve_stdio(api: str, token: str | None) -> None:
    async with httpx.AsyncClient(base_url=api, timeout=60) as client:
        server = build_server(client, lambda _: token)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
