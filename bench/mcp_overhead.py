"""The cost of one MCP tool call over the same HTTP call: the same requests, alternately through
plain HTTP (httpx) and through MCP with the SDK's client (one session), over streamable HTTP (the
API's /mcp, calls served in-process) and over stdio (``hivemem mcp``, calls over the network).

    python -m bench.mcp_overhead                       # a temporary stack (Kafka, Postgres, services)
    python -m bench.mcp_overhead --api URL --token T   # a running API; T bound to a claw
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx
import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from bench.figures import dist, percentile

Transport = Literal["http", "stdio"]


@contextlib.asynccontextmanager
async def session(api: str, token: str, transport: Transport) -> AsyncIterator[ClientSession]:
    async with contextlib.AsyncExitStack() as stack:
        if transport == "http":
            client = await stack.enter_async_context(
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
            )
            streams = await stack.enter_async_context(streamable_http_client(f"{api}/mcp", http_client=client))
        else:
            command = str(Path(sys.executable).parent / "hivemem")
            env = {**os.environ, "HIVEMEM_TOKEN": token}
            params = StdioServerParameters(command=command, args=["mcp", "--api", api], env=env)
            streams = await stack.enter_async_context(stdio_client(params))
        s = await stack.enter_async_context(ClientSession(*streams))
        await s.initialize()
        yield s


async def _measure(api: str, token: str, tool: str, path: str, bodies: list[dict[str, Any]],
                   transport: Transport, warmup: int) -> tuple[list[float], list[float]]:  # fmt: skip
    """(HTTP ms, MCP ms) per request. Each request goes both ways, alternating which goes first (the
    second sees warm caches), so both see the same load and the same caches."""
    http_ms: list[float] = []
    mcp_ms: list[float] = []
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=api, headers=headers, timeout=60) as h, session(api, token, transport) as s:

        async def via_http(body: dict[str, Any]) -> float:
            t = time.perf_counter()
            (await h.post(path, json=body)).raise_for_status()
            return (time.perf_counter() - t) * 1000

        async def via_mcp(body: dict[str, Any]) -> float:
            t = time.perf_counter()
            res = await s.call_tool(tool, body)
            if res.is_error:
                raise SystemExit(f"{tool}: {res.structured_content}")
            return (time.perf_counter() - t) * 1000

        for i, body in enumerate([*bodies[:warmup], *bodies]):
            if i % 2:
                t_mcp, t_http = await via_mcp(body), await via_http(body)
            else:
                t_http, t_mcp = await via_http(body), await via_mcp(body)
            if i >= warmup:
                http_ms.append(t_http)
                mcp_ms.append(t_mcp)
    return http_ms, mcp_ms


def compare(api: str, token: str, tool: str, path: str, bodies: list[dict[str, Any]],
            transports: tuple[Transport, ...] = ("http",), warmup: int = 5) -> str:  # fmt: skip
    lines = [f"MCP overhead, {len(bodies)} x {tool} vs POST {path} (one MCP session, after {warmup} warm-up):"]
    for transport in transports:
        http_ms, mcp_ms = anyio.run(_measure, api, token, tool, path, bodies, transport, warmup)
        over = percentile([m - h for h, m in zip(http_ms, mcp_ms, strict=True)], 0.5)
        label = "streamable HTTP" if transport == "http" else "stdio"
        lines += [f"   {label}:", f"      HTTP {dist(http_ms)}", f"      MCP  {dist(mcp_ms)}",
                  f"      overhead: p50 {percentile(mcp_ms, 0.5) - percentile(http_ms, 0.5):+.1f} ms "
                  f"(median of pairwise differences {over:+.1f} ms)"]  # fmt: skip
    return "\n".join(lines)


def run(api: str, token: str, n: int) -> None:
    with httpx.Client(base_url=api, headers={"Authorization": f"Bearer {token}"}, timeout=60) as h:
        for i in range(5):
            note = {"content": f"Note {i}: the staging database moved to host db-{i}."}
            h.post("/api/v1/memory/episodes", params={"waitMs": 20_000}, json=note).raise_for_status()
    words = ["database", "staging", "host", "moved", "note"]
    searches = [{"query": f"where is the {words[i % 5]} {i}", "mode": "text"} for i in range(n)]
    recalls = [{"query": f"checkout errors after deploy {i}", "k": 5} for i in range(n)]
    print(compare(api, token, "memory_search", "/api/v1/memory/search", searches, ("http", "stdio")))
    print(compare(api, token, "caml_recall", "/caml/v1/recall", recalls, ("http", "stdio")))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.mcp_overhead")
    p.add_argument("--api", default=None, help="a running API (default: start a temporary stack)")
    p.add_argument("--token", default=os.environ.get("HIVEMEM_TOKEN"), help="a token bound to a claw")
    p.add_argument("-n", type=int, default=50, help="requests each way per tool")
    args = p.parse_args(argv)
    if args.api:
        run(args.api, args.token, args.n)
        return 0
    from bench.temp_stack import temporary_stack
    from projections.auth import mint_token

    with temporary_stack() as settings:
        token = mint_token(settings.load_config().token_secret, "acme", "bench", f"mcp-{uuid.uuid4().hex[:6]}")
        run(f"http://127.0.0.1:{settings.api_port}", token, args.n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
