"""A tool call as the HTTP API request it stands for, and the API's answer as the tool result.

The arguments are not validated here: the API validates them, so a refusal has the code, status
and detail an HTTP caller gets. Only what cannot become a request at all (an unknown tool, a path
parameter that is missing or not a string, an argument a GET route does not take) is refused here,
422 ``INVALID_REQUEST`` as the API answers a malformed request.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
import mcp.types as types

from projections.mcp.tools import BY_NAME, ToolSpec


class ToolInputError(ValueError):
    pass


@dataclass(frozen=True)
class HttpCall:
    method: str
    path: str
    params: dict[str, str]
    body: dict[str, Any] | None


def _param(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    raise ToolInputError(f"{name}: a parameter is a string, a number or a boolean")


def request_of(spec: ToolSpec, args: dict[str, Any]) -> HttpCall:
    """The HTTP request for a tool call: path and query parameters from the ``query`` fields (by
    argument or route name), everything else the body (wrapped in an envelope for envelope tools).
    A tool that stands for several routes (``choose``) first picks the one its arguments select."""
    if spec.choose is not None:
        spec, args = spec.choose(args)
    fields = spec.query_fields()
    by_arg = {**{f: f for f in fields}, **{a: f for f, a in fields.items()}}
    params: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for key, value in args.items():
        if key in by_arg:
            params[by_arg[key]] = value
        else:
            rest[key] = value
    if spec.body is None and rest:
        raise ToolInputError(f"unknown argument(s) {sorted(rest)}; {spec.name} takes {sorted(fields.values())}")
    path = spec.path
    for name in spec.path_params():
        value = params.pop(name, None)
        if not isinstance(value, str) or not value:
            raise ToolInputError(f"{fields.get(name, name)} is required (a non-empty string)")
        path = path.replace("{" + name + "}", quote(value, safe=""))
    query = {k: _param(fields.get(k, k), v) for k, v in params.items() if v is not None}
    body: dict[str, Any] | None = None
    if spec.body is not None:
        body = {"type": spec.envelope, "payload": rest} if spec.envelope else rest
    return HttpCall(spec.method, path, query, body)


def error_result(status: int, code: str, detail: str) -> types.CallToolResult:
    """A refused call: ``{"status", "code", "detail"}`` as structured content and as JSON text."""
    body = {"status": status, "code": code, "detail": detail}
    return types.CallToolResult(content=[types.TextContent(text=json.dumps(body))], structured_content=body,
                                is_error=True)  # fmt: skip


def result_of(resp: httpx.Response) -> types.CallToolResult:
    try:
        data: Any = resp.json()
    except ValueError:
        return error_result(502 if resp.status_code < 400 else resp.status_code, "BAD_RESPONSE", resp.text[:1000])
    if resp.status_code >= 400:
        if not isinstance(data, dict):
            data = {}
        return error_result(resp.status_code, str(data.get("code", "ERROR")), str(data.get("detail", "")))
    # Structured content is a JSON object: a list (find_claws) is wrapped as {"result": [...]}.
    structured = data if isinstance(data, dict) else {"result": data}
    return types.CallToolResult(content=[types.TextContent(text=resp.text)], structured_content=structured)


async def call(client: httpx.AsyncClient, authorization: str | None, name: str, args: dict[str, Any],
               tools: Mapping[str, ToolSpec] = BY_NAME) -> types.CallToolResult:  # fmt: skip
    """Run one tool call of the table ``tools`` (by name) against the API ``client`` talks to, as the
    holder of ``authorization``."""
    spec = tools.get(name)
    if spec is None:
        return error_result(404, "UNKNOWN_TOOL", f"no tool {name!r}; tools/list names them")
    if not authorization:
        return error_result(401, "AUTH_MISSING", "no bearer token: start `hivemem mcp` with --token or HIVEMEM_TOKEN")
    try:
        req = request_of(spec, args)
    except ToolInputError as exc:
        return error_result(422, "INVALID_REQUEST", str(exc))
    try:
        resp = await client.request(req.method, req.path, params=req.params, json=req.body,
                                    headers={"Authorization": authorization})  # fmt: skip
    except httpx.TransportError as exc:
        return error_result(503, "API_UNAVAILABLE", f"the HiveMem API did not answer: {type(exc).__name__}")
    return result_of(resp)
