"""``hivemem mcp [--server kstar]``: an MCP server over stdio, calling a running HiveMem API with one token."""

from __future__ import annotations

import httpx
from mcp.server.stdio import stdio_server

from projections.mcp.server import SERVER_NAME, build


def authorization(token: str | None) -> str | None:
    """``Bearer <token>`` (a token given with its scheme is taken as it is)."""
    token = (token or "").strip()
    if not token:
        return None
    return token if token.lower().startswith("bearer ") else f"Bearer {token}"


async def serve_stdio(api: str, token: str | None, server_name: str = SERVER_NAME) -> None:
    """Serve the MCP server ``server_name`` (``hivemem`` or ``kstar``) on stdin/stdout."""
    header = authorization(token)
    async with httpx.AsyncClient(base_url=api, timeout=60) as client:
        server = build(client, lambda _: header, server_name)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
