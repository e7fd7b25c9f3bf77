"""The ``kstar`` MCP server with the SDK's own clients against the session stack: over streamable HTTP
(the API's /mcp/kstar) and over stdio (``hivemem mcp --server kstar``). A trace stored is queried back;
a delegation token and its child are issued, verified, revoked and traced; and the same requests
through HTTP and through MCP give the same result, field by field but for the ids a write generates
(F-30's semantic transparency)."""

from __future__ import annotations

import contextlib
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from hivemem.stack import Stack
from projections.auth import mint_token
from tests.integration.support import http

pytestmark = pytest.mark.integration
TENANT = "kstar-mcp"
X25 = {"store_trace", "query_memory", "query_traces", "store_perception", "store_fact", "store_skill", "update_skill",
       "update_skill_maturity", "store_control_token", "verify_control_token", "revoke_control_token",
       "get_token_lineage", "export_memory", "export_bundle", "import_bundle"}  # fmt: skip
WAIT = 20_000
Mode = Literal["stdio", "http"]
Result = tuple[bool, dict[str, Any]]  # (isError, structured content)
GENERATED = ("recordId", "eventId", "consistencyToken", "knownAt")  # differ between two writes of the same request
GENERATED_TOKEN = ("token_id", "granted_at", "signature")  # ... and in a token the server issues


class Caller:
    """One MCP connection: ``await caller(name, args)`` is the tool's (isError, structured content)."""

    def __init__(self, session: ClientSession | Client, server_name: str) -> None:
        self.session, self.server_name = session, server_name

    async def names(self) -> set[str]:
        return {t.name for t in (await self.session.list_tools()).tools}

    async def __call__(self, name: str, args: dict[str, Any]) -> Result:
        res = await self.session.call_tool(name, args)
        assert isinstance(res.structured_content, dict), res
        return bool(res.is_error), res.structured_content


def _token(stack: Stack, claw: str | None) -> str:
    return mint_token(stack.settings.load_config().token_secret, TENANT, "kstar-mcp-test", claw)


@contextlib.asynccontextmanager
async def connect(stack: Stack, token: str, mode: Mode, modern: bool = False) -> AsyncIterator[Caller]:
    """The kstar server over /mcp/kstar or stdio; ``modern``: the SDK's ``Client`` (2026 protocol),
    else a ``ClientSession`` with the initialize handshake."""
    async with contextlib.AsyncExitStack() as stack_:
        if mode == "http":
            client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
            h = await stack_.enter_async_context(client)
            transport: Any = streamable_http_client(f"{stack.api_url}/mcp/kstar", http_client=h)
        else:
            env = {**{k: v for k, v in os.environ.items() if k != "HIVEMEM_TOKEN"}, "HIVEMEM_TOKEN": token}
            transport = stdio_client(StdioServerParameters(command=str(Path(sys.executable).parent / "hivemem"),
                                                           args=["mcp", "--server", "kstar", "--api", stack.api_url],
                                                           env=env))  # fmt: skip
        if modern:
            c = await stack_.enter_async_context(Client(transport, read_timeout_seconds=60))
            yield Caller(c, c.server_info.name if c.server_info else "")
            return
        read, write = await stack_.enter_async_context(transport)
        session = await stack_.enter_async_context(ClientSession(read, write))
        init = await session.initialize()
        yield Caller(session, init.server_info.name)


def run(stack: Stack, token: str, mode: Mode, fn: Callable[[Caller], Awaitable[None]], modern: bool = False) -> None:
    async def go() -> None:
        async with connect(stack, token, mode, modern) as caller:
            await fn(caller)

    anyio.run(go)


async def until(c: Caller, name: str, args: dict[str, Any], ok: Callable[[Result], bool]) -> Result:
    """Call until ``ok`` (a read model may trail the verdict a write waited for), at most 30 s."""
    deadline = time.monotonic() + 30
    while True:
        res = await c(name, args)
        if ok(res) or time.monotonic() > deadline:
            return res
        await anyio.sleep(0.3)


def trace(tag: str, goal: str = "approve the overdue invoices") -> dict[str, Any]:
    return {"situation": {"domain": f"billing.{tag}", "actor": "urn:principal:acme:clerk", "channel": "mcp",
                          "context": {"batch": 7}},
            "task": {"goal": goal, "constraints": ["under 1000 EUR"]},
            "action": {"type": "approve", "parameters": {"count": 3}, "tools_used": ["ledger"]},
            "result": {"success": True, "outcome": {"approved": 3}}, "metadata": {"mode": "autonomous",
                                                                                  "tags": [tag]}}  # fmt: skip


def stored(res: Result) -> dict[str, Any]:
    err, body = res
    assert not err and body["status"] == "STORED", body
    return body


def ids(res: Result) -> list[str]:
    assert not res[0], res
    return [s["recordId"] for s in res[1]["result"]]


@pytest.mark.parametrize("mode", ["http", "stdio"])
def test_traces_and_control_tokens_through_the_kstar_server(stack: Stack, mode: Mode) -> None:
    tag = uuid.uuid4().hex[:8]
    claw = f"kmcp-{tag}"
    seen: dict[str, Result] = {}

    async def session(c: Caller) -> None:
        assert c.server_name == "kstar"
        assert await c.names() == X25
        seen["trace"] = await c("store_trace", {**trace(tag), "wait_ms": WAIT})
        domain = {"filters": {"situation.domain": f"billing.{tag}"}}
        seen["query"] = await until(c, "query_traces", domain, lambda r: bool(not r[0] and r[1]["result"]))
        seen["memory"] = await c("query_memory", domain)
        seen["search"] = await until(c, "query_memory", {"query": "overdue invoices"},
                                     lambda r: bool(not r[0] and r[1]["result"]))  # fmt: skip
        seen["bad_trace"] = await c("store_trace", {"situation": {"domain": "d"}, "task": {"goal": "g"}})
        delegation = {"token_type": "delegation", "scope": f"billing:{tag}", "permissions": ["approve", "delegate"]}
        seen["parent"] = await c("store_control_token", {**delegation, "wait_ms": WAIT})
        parent = seen["parent"][1].get("recordId", "none")
        seen["child"] = await c("store_control_token", {
            "token_type": "capability_grant", "scope": f"billing:{tag}:invoices", "permissions": ["approve"],
            "delegation_chain": [parent], "wait_ms": WAIT})  # fmt: skip
        child = seen["child"][1].get("recordId", "none")
        seen["valid"] = await until(c, "verify_control_token", {"token_id": child, "scope": f"billing:{tag}:invoices"},
                                    lambda r: r[1].get("valid") is True)  # fmt: skip
        seen["wider"] = await c("verify_control_token", {"token_id": child, "scope": f"billing:{tag}"})
        seen["lineage"] = await c("get_token_lineage", {"token_id": child})
        seen["revoke"] = await c("revoke_control_token", {"token_id": parent, "reason": "rotated", "wait_ms": WAIT})
        seen["revoked"] = await until(c, "verify_control_token", {"token_id": parent, "scope": f"billing:{tag}"},
                                      lambda r: r[1].get("valid") is False)  # fmt: skip
        seen["orphan"] = await c("verify_control_token", {"token_id": child, "scope": f"billing:{tag}:invoices"})
        seen["lineage_after"] = await c("get_token_lineage", {"token_id": child})
        seen["unknown"] = await c("revoke_control_token", {"token_id": f"nope-{tag}", "reason": "x"})
        seen["missing"] = await c("verify_control_token", {"token_id": f"nope-{tag}", "scope": "billing"})
        seen["not_mine"] = await c("query_traces", {"memory": f"other-{tag}"})

    run(stack, _token(stack, claw), mode, session)
    trace_id = stored(seen["trace"])["recordId"]
    assert stored(seen["trace"])["memory"] == claw and stored(seen["trace"])["kind"] == "trace"
    assert ids(seen["query"]) == [trace_id] and seen["memory"] == seen["query"]
    assert trace_id in ids(seen["search"])
    assert seen["query"][1]["result"][0]["record"]["task"]["goal"] == "approve the overdue invoices"
    assert seen["bad_trace"][0] and seen["bad_trace"][1]["status"] == 422
    assert seen["bad_trace"][1]["code"] == "KSTAR_INVALID_RECORD" and "action" in seen["bad_trace"][1]["detail"]
    parent, child = stored(seen["parent"])["recordId"], stored(seen["child"])["recordId"]
    assert stored(seen["parent"])["record"]["signature"] and stored(seen["child"])["record"]["delegation_chain"] == [
        parent]  # fmt: skip
    assert seen["valid"] == (False, {**seen["valid"][1], "valid": True, "reason": None})
    assert seen["valid"][1]["token"]["token_id"] == child
    assert seen["wider"][1]["valid"] is False and seen["wider"][1]["code"] == "TOKEN_SCOPE_MISMATCH"
    assert [t["token_id"] for t in seen["lineage"][1]["result"]] == [child, parent]
    assert stored(seen["revoke"])["recordId"] == parent
    assert seen["revoked"] == (False, {"valid": False, "reason": "Token revoked", "code": "TOKEN_REVOKED",
                                       "token": None})  # fmt: skip
    assert seen["orphan"][1]["valid"] is False  # its parent is revoked
    after = seen["lineage_after"][1]["result"]
    assert [t["token_id"] for t in after] == [child, parent] and after[1]["revoked"] is True
    assert after[1]["revocation_reason"] == "rotated"
    assert seen["unknown"] == (True, {"status": 404, "code": "TOKEN_NOT_FOUND", "detail": seen["unknown"][1]["detail"]})
    assert seen["missing"][1]["valid"] is False and seen["missing"][1]["reason"] == "Token not found"
    assert seen["not_mine"][0] and seen["not_mine"][1]["code"] == "KSTAR_NOT_YOUR_MEMORY"


def as_mcp(r: httpx.Response) -> Result:
    """What MCP should answer for this HTTP answer."""
    data = r.json()
    if r.status_code >= 400:
        return True, {"status": r.status_code, **data}
    return False, data if isinstance(data, dict) else {"result": data}


def without_generated(res: Result) -> Result:
    err, body = res
    out = {k: v for k, v in body.items() if k not in GENERATED}
    if isinstance(out.get("record"), dict):
        out["record"] = {k: v for k, v in out["record"].items() if k not in GENERATED_TOKEN}
    return err, out


@pytest.mark.parametrize("mode", ["http", "stdio"])
def test_http_and_mcp_give_the_same_result(stack: Stack, mode: Mode) -> None:
    """The same writes (modulo the ids they generate) and reads through HTTP and MCP (the 2026 Client)."""
    tag = uuid.uuid4().hex[:8]
    claw = f"kpar-{tag}"
    grant = {"token_type": "capability_grant", "scope": f"ledger:{tag}", "permissions": ["read"]}
    with http(stack, TENANT, claw) as h:
        wrote = h.post("/kstar/v1/traces", params={"wait_ms": WAIT}, json=trace(tag, "reconcile the ledger"))
        token = h.post("/kstar/v1/tokens", params={"wait_ms": WAIT}, json=grant)
        assert wrote.status_code == 200 and token.status_code == 200, (wrote.text, token.text)
    token_id = token.json()["recordId"]
    domain = {"filters": {"situation.domain": f"billing.{tag}"}, "order_by": "timestamp"}
    writes: list[tuple[str, str, dict[str, Any]]] = [  # tool, path, arguments (all POST, wait_ms sent as a param)
        ("store_trace", "/kstar/v1/traces", trace(tag, "reconcile the ledger")),
        ("store_control_token", "/kstar/v1/tokens", grant),
        ("store_trace", "/kstar/v1/traces", {"situation": {"domain": "d"}, "task": {"goal": "g"}}),
        ("store_control_token", "/kstar/v1/tokens", {"scope": "x"}),
        ("revoke_control_token", f"/kstar/v1/tokens/nope-{tag}/revoke", {"token_id": f"nope-{tag}", "reason": "r"}),
    ]
    verify, other = {"token_id": token_id, "scope": f"ledger:{tag}"}, {"token_id": token_id, "scope": "other"}
    reads: list[tuple[str, str, str, dict[str, Any] | None, dict[str, Any]]] = [  # tool, HTTP request, MCP arguments
        ("query_traces", "POST", "/kstar/v1/traces/query", domain, domain),
        ("query_memory", "POST", "/kstar/v1/traces/query", domain, domain),
        ("verify_control_token", "POST", "/kstar/v1/tokens/verify", verify, verify),
        ("verify_control_token", "POST", "/kstar/v1/tokens/verify", other, other),
        ("verify_control_token", "POST", "/kstar/v1/tokens/verify", {"token_id": token_id}, {"token_id": token_id}),
        ("get_token_lineage", "GET", f"/kstar/v1/tokens/{token_id}/lineage", None, {"token_id": token_id}),
        ("query_traces", "POST", "/kstar/v1/traces/query", {"filters": {"nope": 1}}, {"filters": {"nope": 1}}),
        ("query_traces", "POST", "/kstar/v1/traces/query?memory=someone-else", {}, {"memory": "someone-else"}),
    ]
    pairs: list[tuple[str, Result, Result]] = []  # (tool, MCP, HTTP)

    async def session(c: Caller) -> None:
        assert c.server_name == "kstar"
        auth = {"Authorization": f"Bearer {_token(stack, claw)}"}
        async with httpx.AsyncClient(base_url=stack.api_url, headers=auth, timeout=60) as h:
            for name, path, args in writes:
                got = await c(name, {**args, "wait_ms": WAIT})
                body = {k: v for k, v in args.items() if k != "token_id"}  # the path's
                want = as_mcp(await h.post(path, params={"wait_ms": WAIT}, json=body))
                pairs.append((name, without_generated(got), without_generated(want)))
            for name, method, path, body_, args in reads:
                for _ in range(5):  # a read model may trail a verdict: retry a pair that differs
                    want = as_mcp(await h.request(method, path, json=body_))
                    got = await c(name, args)
                    if got == want:
                        break
                    await anyio.sleep(0.5)
                pairs.append((name, got, want))

    run(stack, _token(stack, claw), mode, session, modern=True)
    for name, got, want in pairs:
        assert got == want, name
    codes = [got[1].get("code") for _, got, _ in pairs]
    statuses = [got[1].get("status") for _, got, _ in pairs]
    assert statuses[:2] == ["STORED", "STORED"]
    assert codes[2:5] == ["KSTAR_INVALID_RECORD", "MISSING_FIELD", "TOKEN_NOT_FOUND"]
    assert len(pairs[5][1][1]["result"]) == 3  # the one written first, then one through HTTP and one through MCP
    assert pairs[7][1][1]["valid"] is True and pairs[8][1][1]["code"] == "TOKEN_SCOPE_MISMATCH"
    assert codes[9] == "INVALID_REQUEST" and [t["token_id"] for t in pairs[10][1][1]["result"]] == [token_id]
    assert pairs[11][1][0] and pairs[12][1][1]["code"] == "KSTAR_NOT_YOUR_MEMORY"


def test_the_kstar_endpoint_refuses_a_missing_token(stack: Stack) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    r = httpx.post(f"{stack.api_url}/mcp/kstar", json=init, headers={"Accept": "application/json, text/event-stream"})
    assert (r.status_code, r.json()["code"]) == (401, "AUTH_MISSING")
