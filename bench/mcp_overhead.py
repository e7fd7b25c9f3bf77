"""The cost of one MCP tool call over the same HTTP call: the same requests through the API's
streamable-HTTP MCP endpoint (the SDK's client, one session) and through plain HTTP (httpx)."""

from __future__ import annotations

import time
from typing import Any

import anyio
import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

from bench.caml import dist


def compare(api: str, token: str, tool: str, path: str, bodies: list[dict[str, Any]]) -> str:
    http_ms: list[float] = []
    with httpx.Client(base_url=api, headers={"Authorization": f"Bearer {token}"}, timeout=60) as h:
        for b in bodies:
            t = time.perf_counter()
            h.post(path, json=b).raise_for_status()
            http_ms.append((time.perf_counter() - t) * 1000)
    mcp_ms: list[float] = []

    async def run() -> None:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            streamablehttp_client(f"{api}/mcp", headers=headers, timeout=60) as (read, write, _),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            for b in bodies:
                t = time.perf_counter()
                res = await s.call_tool(tool, b)
                mcp_ms.append((time.perf_counter() - t) * 1000)
                if res.isError:
                    raise SystemExit(f"{tool}: {res.structuredContent}")

    anyio.run(run)
    http_p50, mcp_p50 = sorted(http_ms)[len(http_ms) // 2], sorted(mcp_ms)[len(mcp_ms) // 2]
    return (f"MCP overhead, {len(bodies)} x {tool} (streamable HTTP, one session) vs {path} (HTTP):\n"
            f"   HTTP {dist(http_ms)}\n   MCP  {dist(mcp_ms)}\n"
            f"   overhead at p50: {mcp_p50 - http_p50:+.1f} ms per call")  # fmt: skip
