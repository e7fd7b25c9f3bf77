"""MCP with the SDK's own client: over stdio (spawning `hivemem mcp`) and over streamable HTTP (the
API's /mcp): the tools are listed and each one answers; the same request through HTTP and MCP gives
the same result field by field; a token of one tenant reaches nothing of another's; a bad token is
refused."""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

from hivemem.stack import Stack
from projections.auth import mint_token
from projections.mcp.tools import TOOLS
from tests.integration.caml_support import ANOMALY_PATTERN, evidence
from tests.integration.support import http
from tests.kmp_story import story

pytestmark = pytest.mark.integration
T0 = 1_767_225_600_000
Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
TIMING = {"tookMs", "took_ms"}


def _token(stack: Stack, tenant: str, claw: str) -> str:
    return mint_token(stack.settings.load_config().token_secret, tenant, "mcp-test", claw)


def _strip(value: Any) -> Any:
    """Drop the server's own timing figures, which differ between two calls."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _run(session_fn: Callable[[ClientSession], Awaitable[None]], stack: Stack, token: str, http_mode: bool) -> None:
    async def go() -> None:
        if http_mode:
            url, headers = f"{stack.api_url}/mcp", {"Authorization": f"Bearer {token}"}
            async with (
                streamablehttp_client(url, headers=headers, timeout=60) as (read, write, _),
                ClientSession(read, write) as s,
            ):
                await s.initialize()
                await session_fn(s)
        else:
            env = {**os.environ, "HIVEMEM_TOKEN": token}
            params = StdioServerParameters(command=str(Path(sys.executable).parent / "hivemem"),
                                           args=["mcp", "--api", stack.api_url], env=env)  # fmt: skip
            async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                await session_fn(s)

    anyio.run(go)


async def _call(s: ClientSession, name: str, args: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    res = await s.call_tool(name, args)
    assert res.structuredContent is not None, res
    return bool(res.isError), res.structuredContent


def _every_tool(stack: Stack, http_mode: bool) -> dict[str, tuple[bool, dict[str, Any]]]:
    tag = uuid.uuid4().hex[:6]
    claw = f"mcp-{tag}"
    about = f"mcp-inc-{tag}"
    out: dict[str, tuple[bool, dict[str, Any]]] = {}

    async def session(s: ClientSession) -> None:
        listed = {t.name: t for t in (await s.list_tools()).tools}
        assert set(listed) == {t.name for t in TOOLS}
        assert listed["kernel_ask"].inputSchema["properties"]["question"]["type"] == "string"
        _, p1 = story(about, T0)[0]
        out["kernel_ingest"] = await _call(s, "kernel_ingest", {**p1, "ingestId": f"{tag}-1"})
        out["kernel_write_memory"] = await _call(s, "kernel_write_memory", {
            "about": about, "kind": "decision", "text": "Scale the pool back up.", "contextRefs": ["hyp-pool"],
            "connections": [{"target": "hyp-pool", "rel": "depends_on", "semanticClass": "CAUSAL",
                             "why": "only if the pool is the cause", "evidence": ["ev-dash"]}]})  # fmt: skip
        out["kernel_wake"] = await _call(s, "kernel_wake", {"about": about})
        out["kernel_ask"] = await _call(s, "kernel_ask", {"about": about, "question": "database pool"})
        for op in ("goto", "near", "rewind", "forward"):
            out[f"kernel_{op}"] = await _call(s, f"kernel_{op}", {"about": about, "cursor": {"ref": "hyp-pool"}})
        out["kernel_trace"] = await _call(s, "kernel_trace", {"about": about, "from": "hyp-pool", "to": "obj"})
        out["kernel_inspect"] = await _call(s, "kernel_inspect", {"about": about, "ref": "hyp-pool"})
        out["memory_add"] = await _call(s, "memory_add", {"content": f"My favourite editor is Helix ({tag}).",
                                                          "sessionId": f"s-{tag}"})  # fmt: skip
        out["memory_search"] = await _call(s, "memory_search", {"query": "favourite editor", "mode": "text"})
        out["memory_ask"] = await _call(s, "memory_ask", {"query": "which editor do I like?", "mode": "text"})
        out["caml_observe"] = await _call(s, "caml_observe", {
            "type": "ANOMALY_DETECTED", "domain": "finance", "summary": f"invoice approvals slow down ({tag})",
            "pattern": ANOMALY_PATTERN, "evidence": evidence()})  # fmt: skip
        out["caml_recall"] = await _call(s, "caml_recall", {"query": "invoice approval latency"})
        out["caml_validate"] = await _call(s, "caml_validate", {"observationId": "no-such-obs", "outcome": "CONFIRMED"})
        pid = f"p-{tag}"
        out["propose"] = await _call(s, "propose", {
            "proposalId": pid, "factKey": f"db/{tag}", "statement": "The primary is db-2.", "proposer": claw,
            "deadline": int(time.time() * 1000) + 60_000})  # fmt: skip
        out["vote"] = await _call(s, "vote", {"proposalId": pid, "vote": "YES"})
        out["proposal_status"] = await _call(s, "proposal_status", {"proposalId": f"nope-{tag}"})
        out["fact_as_of"] = await _call(s, "fact_as_of", {"factKey": f"nope/{tag}"})
        out["find_claws"] = await _call(s, "find_claws", {"capability": "logs.read"})

    _run(session, stack, _token(stack, "kmp-a", claw), http_mode)
    return out


def _check_every_tool(out: dict[str, tuple[bool, dict[str, Any]]]) -> None:
    assert set(out) == {t.name for t in TOOLS}
    ok = {n: body for n, (err, body) in out.items() if not err}
    assert ok["kernel_ingest"]["status"] == "INGESTED"
    assert ok["kernel_write_memory"]["result"]["quality"]["rich"] == 1
    assert ok["kernel_wake"]["objective"]["ref"] == "obj"
    assert ok["kernel_ask"]["answerRef"] == "hyp-pool"
    assert ok["kernel_goto"]["resolved"]["ref"] == "hyp-pool"
    assert ok["kernel_trace"]["found"] and ok["kernel_inspect"]["kind"] == "entry"
    assert ok["memory_add"]["status"] == "STORED"
    assert ok["caml_observe"]["status"] == "ACCEPTED" and "results" in ok["caml_recall"]
    assert out["caml_validate"][0] and out["caml_validate"][1]["status"] in (404, 409, 422)
    assert ok["propose"]["topic"].endswith("proposal") and ok["propose"]["consistencyToken"]
    assert ok["vote"]["topic"].endswith("vote")
    assert out["proposal_status"] == (True, {"status": 404, "code": "PROPOSAL_NOT_FOUND",
                                             "detail": out["proposal_status"][1]["detail"]})  # fmt: skip
    assert out["fact_as_of"][1]["code"] == "FACT_NOT_FOUND"
    assert isinstance(ok["find_claws"]["result"], list)


def test_every_tool_over_stdio(stack: Stack) -> None:
    _check_every_tool(_every_tool(stack, http_mode=False))


def test_every_tool_over_streamable_http(stack: Stack) -> None:
    _check_every_tool(_every_tool(stack, http_mode=True))


def test_http_and_mcp_give_the_same_result(stack: Stack) -> None:
    about = f"par-{uuid.uuid4().hex[:6]}"
    claw = f"par-{uuid.uuid4().hex[:6]}"
    token = _token(stack, "kmp-a", claw)
    with http(stack, "kmp-a", claw) as h:
        for _, p in story(about, T0):
            assert h.post("/kmp/v1/ingest?wait_ms=20000", json=p).status_code == 200
    requests: list[tuple[str, str, dict[str, Any]]] = [
        ("kernel_ask", "/kmp/v1/ask", {"about": about, "question": "why roll back the payments service"}),
                ("kernel_wake", "/kmp/v1/wake", {"about": about}),
                ("kernel_trace", "/kmp/v1/trace", {"about": about, "from": "res-fixed", "to": "hyp-pool"}),
                ("kernel_near", "/kmp/v1/near", {"about": about, "cursor": {"ref": "dec-rollback"}}),
                ("kernel_ask", "/kmp/v1/ask", {"question": "x", "scope": {"mode": "ABOUTS"}})]  # fmt: skip
    via_mcp: list[tuple[bool, dict[str, Any]]] = []

    async def session(s: ClientSession) -> None:
        for name, _, body in requests:
            via_mcp.append(await _call(s, name, body))

    _run(session, stack, token, http_mode=True)
    with httpx.Client(base_url=stack.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as h:
        for (_, path, body), (err, mcp_body) in zip(requests, via_mcp, strict=True):
            r = h.post(path, json=body)
            if r.status_code == 200:
                assert not err and _strip(mcp_body) == _strip(r.json())
            else:
                assert err and mcp_body == {"status": r.status_code, **r.json()}
    assert via_mcp[-1][1]["code"] == "ABOUTS_REQUIRED"


def test_tenants_stay_apart_and_bad_tokens_are_refused(stack: Stack) -> None:
    about = f"sec-{uuid.uuid4().hex[:6]}"
    with http(stack, "kmp-a", "owner") as h:
        _, p1 = story(about, T0)[0]
        assert h.post("/kmp/v1/ingest?wait_ms=20000", json=p1).status_code == 200
    seen: dict[str, tuple[bool, dict[str, Any]]] = {}

    async def session(s: ClientSession) -> None:
        seen["inspect"] = await _call(s, "kernel_inspect", {"about": about, "ref": "obj"})
        seen["ask"] = await _call(s, "kernel_ask", {"question": "payments", "scope": {"mode": "ALL_ABOUTS"}})

    _run(session, stack, _token(stack, "kmp-b", "intruder"), http_mode=True)
    assert seen["inspect"][0] and seen["inspect"][1]["code"] == "REF_NOT_FOUND"
    assert not seen["ask"][0] and seen["ask"][1]["because"] == []
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    headers = {"Accept": "application/json, text/event-stream"}
    r = httpx.post(f"{stack.api_url}/mcp", json=init, headers=headers, timeout=30)
    assert (r.status_code, r.json()["code"]) == (401, "AUTH_MISSING")
    r = httpx.post(f"{stack.api_url}/mcp", json=init, headers={**headers, "Authorization": "Bearer junk"}, timeout=30)
    assert r.status_code == 401
    stranger = mint_token(stack.settings.load_config().token_secret, "no-such-tenant", "t", "c")
    r = httpx.post(f"{stack.api_url}/mcp", json=init, headers={**headers, "Authorization": f"Bearer {stranger}"},
                   timeout=30)  # fmt: skip
    assert (r.status_code, r.json()["code"]) == (403, "UNKNOWN_TENANT")
