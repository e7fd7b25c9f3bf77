"""``hivemem mcp``: the MCP server over stdio, calling a running HiveMem API with one token."""

from __future__ import annotations

import httpx
from mcp.server.stdio import stdio_server

from projections.mcp.server import build_server


def authorization(token: str | None) -> str | None:
    """``Bearer <token>`` (a token given with its scheme is taken as it is)."""
    token = (token or "").strip()
    if not token:
        return None
    return token if token.lower().startswith("bearer ") else f"Bearer {token}"


async def serve_stdio(api: str, token: str | None) -> None:
    header = authorization(token)
    async with httpx.AsyncClient(base_url=api, timeout=60) as client:
        server = build_server(client, lambda _: header)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
