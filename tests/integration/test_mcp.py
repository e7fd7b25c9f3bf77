"""MCP with the SDK's own clients, against the session stack: over stdio (spawning `hivemem mcp`)
and over streamable HTTP (the API's /mcp), with the handshake-era ClientSession and the 2026
`Client`. Every tool answers what an HTTP caller gets; the same requests through HTTP and MCP give
the same results field by field (the knowledge pool end to end: propose, vote, decision, fact as
of an instant); a token of one tenant reaches nothing of another's; a bad token is refused."""

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
from mcp import Client, ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from hivemem.stack import Stack
from projections.auth import mint_token
from projections.mcp.tools import TOOLS
from tests.integration.caml_support import ANOMALY_PATTERN, evidence
from tests.integration.governance_support import beat_all, fleet
from tests.kmp_story import story

pytestmark = pytest.mark.integration
T0 = 1_767_225_600_000
Mode = Literal["stdio", "http"]
Result = tuple[bool, dict[str, Any]]  # (isError, structured content)


class Caller:
    """One MCP connection: ``await caller(name, args)`` is the tool's (isError, structured content)."""

    def __init__(self, session: ClientSession | Client) -> None:
        self.session = session

    async def names(self) -> set[str]:
        return {t.name for t in (await self.session.list_tools()).tools}

    async def __call__(self, name: str, args: dict[str, Any]) -> Result:
        res = await self.session.call_tool(name, args)
        assert isinstance(res.structured_content, dict), res
        return bool(res.is_error), res.structured_content


def _token(stack: Stack, tenant: str, claw: str | None) -> str:
    return mint_token(stack.settings.load_config().token_secret, tenant, "mcp-test", claw)


@contextlib.asynccontextmanager
async def connect(stack: Stack, token: str | None, mode: Mode, modern: bool = False) -> AsyncIterator[Caller]:
    """A connection over stdio or /mcp; ``modern``: the SDK's ``Client`` (2026 protocol), else a
    ``ClientSession`` with the initialize handshake, as most hosts still do."""
    async with contextlib.AsyncExitStack() as stack_:
        if mode == "http":
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            http = await stack_.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=60))
            transport: Any = streamable_http_client(f"{stack.api_url}/mcp", http_client=http)
        else:
            env = {k: v for k, v in os.environ.items() if k != "HIVEMEM_TOKEN"}
            env.update({"HIVEMEM_TOKEN": token} if token else {})
            transport = stdio_client(StdioServerParameters(command=str(Path(sys.executable).parent / "hivemem"),
                                                           args=["mcp", "--api", stack.api_url], env=env))  # fmt: skip
        if modern:
            yield Caller(await stack_.enter_async_context(Client(transport, read_timeout_seconds=60)))
            return
        read, write = await stack_.enter_async_context(transport)
        session = await stack_.enter_async_context(ClientSession(read, write))
        await session.initialize()
        yield Caller(session)


Session = Callable[[Caller], Awaitable[None]]


def run(stack: Stack, token: str | None, mode: Mode, fn: Session, modern: bool = False) -> None:
    async def go() -> None:
        async with connect(stack, token, mode, modern) as caller:
            await fn(caller)

    anyio.run(go)


async def until(c: Caller, name: str, args: dict[str, Any], ok: Callable[[Result], bool]) -> Result:
    """Call until ``ok`` (the read models fold asynchronously), at most a minute."""
    deadline = time.monotonic() + 60
    while True:
        res = await c(name, args)
        if ok(res) or time.monotonic() > deadline:
            return res
        await anyio.sleep(0.3)


WALL_CLOCK = ("tookMs", "latencyMs", "ageDays", "asOf")  # timings, and "now" where the request gave no instant


# A KMP answer's own knownAt is the instant it was read at when the request gave none (its rows' stay).
READ_AT = ("knownAt",)


def _strip(value: Any, top: bool = True) -> Any:
    """Without what the server derives from its clock, which differs between two calls."""
    if isinstance(value, dict):
        clock = WALL_CLOCK + READ_AT if top else WALL_CLOCK
        return {k: round(v, 4) if k == "compositeScore" else _strip(v, False) for k, v in value.items()
                if k not in clock}  # fmt: skip
    return [_strip(v, False) for v in value] if isinstance(value, list) else value


def every_tool(stack: Stack, mode: Mode) -> None:
    """One real request per tool, as a claw of kmp-a would make them; what the user sees."""
    tag = uuid.uuid4().hex[:6]
    claw, about, pid = f"mcp-{tag}", f"mcp-inc-{tag}", f"p-{tag}"
    seen: dict[str, Result] = {}

    async def session(c: Caller) -> None:
        assert await c.names() == {t.name for t in TOOLS}
        seen["kernel_ingest"] = await c("kernel_ingest", {**story(about, T0)[0][1], "ingestId": f"{tag}-1"})
        seen["kernel_write_memory"] = await c("kernel_write_memory", {
            "about": about, "kind": "decision", "text": "Scale the pool back up.", "contextRefs": ["hyp-pool"],
            "connections": [{"target": "hyp-pool", "rel": "depends_on", "semanticClass": "CAUSAL",
                             "why": "only if the pool is the cause", "evidence": ["ev-dash"]}]})  # fmt: skip
        seen["kernel_wake"] = await c("kernel_wake", {"about": about})
        seen["kernel_ask"] = await c("kernel_ask", {"about": about, "question": "database pool"})
        for op in ("goto", "near", "rewind", "forward"):
            seen[f"kernel_{op}"] = await c(f"kernel_{op}", {"about": about, "cursor": {"ref": "hyp-pool"}})
        seen["kernel_trace"] = await c("kernel_trace", {"about": about, "from": "hyp-pool", "to": "obj"})
        seen["kernel_inspect"] = await c("kernel_inspect", {"about": about, "ref": "hyp-pool"})
        seen["memory_add"] = await c("memory_add", {"content": f"My favourite editor is Helix ({tag}).",
                                                    "sessionId": f"s-{tag}", "waitMs": 20_000})  # fmt: skip
        seen["memory_search"] = await c("memory_search", {"query": "favourite editor", "mode": "text"})
        seen["memory_ask"] = await c("memory_ask", {"query": "which editor do I like?", "mode": "text"})
        seen["caml_observe"] = await c("caml_observe", {
            "type": "ANOMALY_DETECTED", "domain": "finance", "summary": f"invoice approvals slow down ({tag})",
            "pattern": ANOMALY_PATTERN, "evidence": evidence()})  # fmt: skip
        seen["caml_recall"] = await c("caml_recall", {"query": "invoice approval latency", "k": 3})
        own = seen["caml_observe"][1].get("observationId", "none")
        seen["caml_validate"] = await c("caml_validate", {"observationId": own, "outcome": "CONFIRMED"})
        seen["propose"] = await c("propose", {"proposalId": pid, "factKey": f"db/{tag}", "proposer": claw,
                                              "statement": "The primary is db-2.",
                                              "deadline": int(time.time() * 1000) + 60_000})  # fmt: skip
        seen["vote"] = await c("vote", {"proposalId": pid, "vote": "YES"})
        written = seen["propose"][1]["consistencyToken"]
        seen["proposal_status"] = await c("proposal_status", {"proposalId": pid, "consistency": written})
        seen["fact_as_of"] = await c("fact_as_of", {"factKey": f"db/{tag}"})
        seen["find_claws"] = await c("find_claws", {"capability": "logs.read"})

    run(stack, _token(stack, "kmp-a", claw), mode, session)
    assert set(seen) == {t.name for t in TOOLS}
    ok = {n: body for n, (err, body) in seen.items() if not err}
    assert ok["kernel_ingest"]["status"] == "INGESTED"
    assert ok["kernel_write_memory"]["result"]["quality"]["rich"] == 1
    assert ok["kernel_wake"]["objective"]["ref"] == "obj" and ok["kernel_ask"]["answerRef"] == "hyp-pool"
    assert ok["kernel_goto"]["resolved"]["ref"] == "hyp-pool"
    assert ok["kernel_trace"]["found"] and ok["kernel_inspect"]["kind"] == "entry"
    assert ok["memory_add"]["status"] == "STORED"
    assert isinstance(ok["memory_search"]["hits"], list) and "answer" in ok["memory_ask"]
    assert ok["caml_observe"]["status"] == "ACCEPTED" and isinstance(ok["caml_recall"]["results"], list)
    assert seen["caml_validate"] == (True, {"status": 403, "code": "SELF_VALIDATION",
                                            "detail": seen["caml_validate"][1]["detail"]})  # fmt: skip
    assert ok["propose"]["topic"].endswith("proposal") and ok["vote"]["topic"].endswith("vote")
    status = ok["proposal_status"]
    assert (status["proposalId"], status["proposer"], status["statement"]) == (pid, claw, "The primary is db-2.")
    assert seen["fact_as_of"][1]["code"] == "FACT_NOT_FOUND" and seen["fact_as_of"][1]["status"] == 404
    assert isinstance(ok["find_claws"]["result"], list)


def test_every_tool_over_stdio(stack: Stack) -> None:
    every_tool(stack, "stdio")


def test_every_tool_over_streamable_http(stack: Stack) -> None:
    every_tool(stack, "http")


def test_knowledge_pool_through_mcp_is_the_http_one(stack: Stack) -> None:
    """Propose and vote through MCP; proposal_status and fact_as_of answer what the HTTP routes do."""
    tag = uuid.uuid4().hex[:6]
    names = [f"gov-{tag}-{i}" for i in range(3)]
    claws = fleet(stack, "kmp-b", names)
    pid, key = f"p-{tag}", f"db/primary-{tag}"
    views: dict[str, Result] = {}

    async def propose(c: Caller) -> None:
        views["propose"] = await c("propose", {"proposalId": pid, "factKey": key, "proposer": names[0],
                                               "statement": "db-2 is the primary", "tags": ["db"],
                                               "deadline": int(time.time() * 1000) + 120_000})  # fmt: skip

    async def vote(c: Caller) -> None:
        views["vote"] = await c("vote", {"proposalId": pid, "vote": "YES", "reason": "checked"})

    beat_all(claws)
    run(stack, _token(stack, "kmp-b", names[0]), "http", propose)
    assert not views["propose"][0], views["propose"]
    for name in names[:2]:
        beat_all(claws)  # heartbeats within the presence window of the votes
        run(stack, _token(stack, "kmp-b", name), "http", vote)
        assert not views["vote"][0], views["vote"]
    reader = _token(stack, "kmp-b", None)

    async def read(c: Caller) -> None:
        views["status"] = await until(c, "proposal_status", {"proposalId": pid},
                                      lambda r: not r[0] and r[1]["decision"] is not None)  # fmt: skip
        views["fact"] = await until(c, "fact_as_of", {"factKey": key}, lambda r: not r[0])
        views["then"] = await c("fact_as_of", {"factKey": key, "asOf": "2001-01-01T00:00:00Z"})
        views["now"] = await c("fact_as_of", {"factKey": key, "asOf": str(int(time.time() * 1000))})
        views["bad"] = await c("fact_as_of", {"factKey": key, "asOf": "yesterday"})

    run(stack, reader, "stdio", read)
    status = views["status"][1]
    assert status["decision"]["outcome"] == "APPROVED" and status["fact"]["version"] == 1
    assert views["fact"][1]["current"]["statement"] == "db-2 is the primary"
    assert views["then"] == (True, {"status": 404, "code": "FACT_NOT_VALID_AT", "detail": views["then"][1]["detail"]})
    assert not views["now"][0] and views["now"][1]["version"] == 1
    with httpx.Client(base_url=stack.api_url, headers={"Authorization": f"Bearer {reader}"}, timeout=60) as h:
        assert h.get(f"/api/v1/proposals/{pid}").json() == status
        assert h.get(f"/api/v1/facts/{key}").json() == views["fact"][1]
        assert h.get(f"/api/v1/facts/{key}", params={"as_of": "2001-01-01T00:00:00Z"}).json() == {
            k: v for k, v in views["then"][1].items() if k != "status"}  # fmt: skip
        bad = h.get(f"/api/v1/facts/{key}", params={"as_of": "yesterday"})
        assert views["bad"][1] == {"status": bad.status_code, **bad.json()} and bad.json()["code"] == "INVALID_AS_OF"


def as_mcp(r: httpx.Response) -> Result:
    """What MCP should answer for this HTTP answer."""
    data = r.json()
    if r.status_code >= 400:
        return True, {"status": r.status_code, **data}
    return False, _strip(data if isinstance(data, dict) else {"result": data})


def test_http_and_mcp_give_the_same_result(stack: Stack) -> None:
    """The same requests through HTTP and through MCP (the 2026 Client, both transports), field by field."""
    tag = uuid.uuid4().hex[:6]
    about, token = f"par-{tag}", _token(stack, "kmp-a", f"par-{tag}")
    summary = f"Listing approvals stall after the registry sync ({tag})"
    with httpx.Client(base_url=stack.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as h:
        for _, p in story(about, T0):
            assert h.post("/kmp/v1/ingest?wait_ms=20000", json=p).status_code == 200
        added = h.post("/api/v1/memory/episodes?wait_ms=20000", json={"content": "I keep my bike in the garage."})
        seen = h.post("/caml/v1/observe?wait_ms=20000", json={"type": "ANOMALY_DETECTED", "domain": "real_estate",
                      "summary": summary, "pattern": ANOMALY_PATTERN, "evidence": evidence()})  # fmt: skip
        assert added.status_code == 201 and seen.status_code == 201, (added.text, seen.text)
    # real_estate: no other test observes in it, so only this test's observations rank.
    recall = {"query": "listing approvals stall", "domain": "real_estate", "k": 5}
    requests: list[tuple[str, str, str, dict[str, Any]]] = [  # tool, method, path, arguments
        ("caml_recall", "POST", "/caml/v1/recall", recall),
        ("memory_search", "POST", "/api/v1/memory/search", {"query": "where is my bike", "mode": "text"}),
        ("memory_ask", "POST", "/api/v1/memory/ask", {"query": "where is my bike", "mode": "text"}),
        ("kernel_ask", "POST", "/kmp/v1/ask", {"about": about, "question": "why roll back the payments"}),
        ("kernel_trace", "POST", "/kmp/v1/trace", {"about": about, "from": "res-fixed", "to": "hyp-pool"}),
        ("find_claws", "GET", "/api/v1/claws", {}),
        ("proposal_status", "GET", "/api/v1/proposals/nope", {"proposalId": "nope"}),
        ("kernel_ask", "POST", "/kmp/v1/ask", {"question": "x", "scope": {"mode": "ABOUTS"}}),
        ("memory_search", "POST", "/api/v1/memory/search", {"query": "x", "k": 0, "extra": 1}),
        ("caml_recall", "POST", "/caml/v1/recall", {"query": ""}),
    ]
    pairs: list[tuple[Result, Result]] = []  # (MCP, HTTP)

    async def session(c: Caller) -> None:
        async with httpx.AsyncClient(base_url=stack.api_url, headers={"Authorization": f"Bearer {token}"},
                                     timeout=60) as h:  # fmt: skip
            await until(c, "caml_recall", recall, lambda r: summary in str(r))  # embedded, so it ranks
            for name, method, path, args in requests:
                for _ in range(5):  # memory and recall settle in the background: retry a pair that differs
                    want = as_mcp(await h.request(method, path, json=None if method == "GET" else args))
                    err, got = await c(name, args)
                    if (err, got if err else _strip(got)) == want:
                        break
                    await anyio.sleep(1)
                pairs.append(((err, got if err else _strip(got)), want))

    for mode in ("http", "stdio"):
        pairs.clear()
        run(stack, token, mode, session, modern=True)
        for (name, *_), (got, want) in zip(requests, pairs, strict=True):
            assert got == want, name
        assert summary in str(pairs[0][0][1]["results"])
        assert [got[1]["code"] for got, _ in pairs[-4:]] == [
            "PROPOSAL_NOT_FOUND", "ABOUTS_REQUIRED", "INVALID_REQUEST", "INVALID_REQUEST"]  # fmt: skip


def test_tenants_stay_apart_and_bad_tokens_are_refused(stack: Stack) -> None:
    tag = uuid.uuid4().hex[:6]
    about, pid = f"sec-{tag}", f"p-sec-{tag}"
    owner: dict[str, Result] = {}

    async def write(c: Caller) -> None:
        owner["ingest"] = await c("kernel_ingest", {**story(about, T0)[0][1], "waitMs": 20_000})
        deadline = int(time.time() * 1000) + 60_000
        owner["propose"] = await c("propose", {"proposalId": pid, "factKey": f"k/{tag}", "statement": "secret",
                                               "proposer": "owner", "deadline": deadline})  # fmt: skip
        written = owner["propose"][1]["consistencyToken"]
        owner["status"] = await c("proposal_status", {"proposalId": pid, "consistency": written})

    run(stack, _token(stack, "kmp-a", "owner"), "http", write)
    assert not owner["status"][0] and owner["status"][1]["proposalId"] == pid
    seen: dict[str, Result] = {}

    async def intrude(c: Caller) -> None:
        seen["status"] = await c("proposal_status", {"proposalId": pid})
        written = owner["propose"][1]["consistencyToken"]
        seen["waited"] = await c("proposal_status", {"proposalId": pid, "consistency": written})
        seen["inspect"] = await c("kernel_inspect", {"about": about, "ref": "obj"})
        seen["ask"] = await c("kernel_ask", {"question": "payments", "scope": {"mode": "ALL_ABOUTS"}})

    for mode in ("http", "stdio"):
        run(stack, _token(stack, "kmp-b", "intruder"), mode, intrude)
        assert seen["status"][1]["code"] == "PROPOSAL_NOT_FOUND" and seen["status"][1]["status"] == 404
        assert seen["waited"][1]["code"] == "INVALID_CONSISTENCY_TOKEN"  # as if it were garbage
        assert seen["inspect"][1]["code"] == "REF_NOT_FOUND"
        assert not seen["ask"][0] and seen["ask"][1]["because"] == []
    # Bad tokens: /mcp refuses before MCP starts, in the API's error shape; stdio answers every call
    # with the API's refusal.
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    accept = {"Accept": "application/json, text/event-stream"}
    stranger = mint_token(stack.settings.load_config().token_secret, "no-such-tenant", "t", "c")
    expired = mint_token(stack.settings.load_config().token_secret, "kmp-a", "t", "c", ttl_s=-60)
    refusals = [(None, 401, "AUTH_MISSING"), ("Bearer junk", 401, "AUTH_INVALID"),
                (f"Bearer {expired}", 401, "AUTH_EXPIRED"), (f"Bearer {stranger}", 403, "UNKNOWN_TENANT")]  # fmt: skip
    for auth, status, code in refusals:
        headers = accept | ({"Authorization": auth} if auth else {})
        r = httpx.post(f"{stack.api_url}/mcp", json=init, headers=headers, timeout=30)
        assert (r.status_code, r.json()["code"]) == (status, code)
    refused: dict[str, Result] = {}

    async def call(c: Caller) -> None:
        refused["junk"] = await c("proposal_status", {"proposalId": pid})

    with pytest.raises(ExceptionGroup) as raised:  # the SDK's client gives up on the 401
        run(stack, "junk", "http", call)
    assert raised.group_contains(MCPError)

    run(stack, "junk", "stdio", call)
    assert refused["junk"][1]["code"] == "AUTH_INVALID" and refused["junk"][1]["status"] == 401
    run(stack, None, "stdio", call)
    assert refused["junk"][1]["code"] == "AUTH_MISSING"
