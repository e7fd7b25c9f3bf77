"""Text at the HTTP edge: a request whose path, query string or JSON body holds text Postgres and
Avro cannot hold is refused before any route reads it.

Three things are refused, on every route, with 422 ``INVALID_REQUEST`` (``INVALID_FIELD`` on
``POST /api/v1/envelopes``, whose fields are refused one by one by the contract):

- a path or query string that does not percent-decode to valid UTF-8 (``%FF``, or ``%ED%A0%80``,
  an encoded lone surrogate) — Starlette would decode it with replacement characters and answer
  for a different value;
- the NUL character anywhere in the decoded path or query string (Postgres text cannot hold it);
- the NUL character or a lone surrogate in any string of a JSON body, key or value (Avro and
  Postgres cannot hold either).

The refusal names where (the part of the request, the parameter or the JSON path) and what rule,
never the submitted value. ``/mcp`` bodies are JSON-RPC and go through: each tool call comes back
into this app in-process and meets this guard there. Must run inside ``BodyLimit``: it reads the
whole body, which ``BodyLimit`` has capped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from email.message import Message as MimeMessage
from typing import Any
from urllib.parse import unquote_to_bytes

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from projections.http.errors import error_bytes

BAD_CHAR = re.compile("[\x00\ud800-\udfff]")
NAMEABLE = re.compile(r"[A-Za-z0-9_.\-]{1,64}")  # a parameter or key shown in a detail; else "…"
FIELD_CODED = frozenset({"/api/v1/envelopes"})  # routes whose body refusals are INVALID_FIELD
UNGUARDED_BODIES = ("/mcp",)  # JSON-RPC: refused by the route each tool call reaches
NUL = "contains the NUL character"
NOT_UTF8 = "is not valid UTF-8 once percent-decoded"


def decoded(raw: bytes) -> str | None:
    """``raw`` percent-decoded as strict UTF-8; None when it is not valid UTF-8 (a lone
    surrogate's encoding, ``%ED%A0%80``, is not)."""
    try:
        return unquote_to_bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return None


def path_problem(raw_path: bytes) -> str | None:
    text = decoded(raw_path)
    if text is None:
        return f"the path {NOT_UTF8}"
    return f"the path {NUL}" if "\x00" in text else None


def query_problem(query: bytes) -> str | None:
    """The first parameter of a query string (``a=1&b=2``) that is not valid text."""
    for pair in query.split(b"&"):
        name_raw, _, value_raw = pair.replace(b"+", b" ").partition(b"=")
        name = decoded(name_raw)
        if name is None or "\x00" in name:
            return f"a query parameter's name {NOT_UTF8 if name is None else NUL}"
        value = decoded(value_raw)
        if value is None or "\x00" in value:
            return f"query parameter {_shown(name)} {NOT_UTF8 if value is None else NUL}"
    return None


def body_problem(body: bytes) -> str | None:
    """The first string of a JSON body (key or value) holding NUL or a lone surrogate. A body
    that is not JSON is not judged here (the route answers it as it always did)."""
    # NUL and lone surrogates reach a parsed string only through \u escapes, raw ED A0..BF bytes
    # (json.loads decodes surrogatepass) or a UTF-16/32 body (its ASCII has zero bytes).
    if b"\\u" not in body and b"\xed" not in body and b"\x00" not in body:
        return None
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return None
    for where, text in _strings(doc):
        found = BAD_CHAR.search(text)
        if found:
            what = NUL if found.group() == "\x00" else "is not valid Unicode (a lone surrogate)"
            return f"{where} {what}"
    return None


def _strings(doc: Any) -> Iterator[tuple[str, str]]:
    """Every string of a parsed JSON document with where it is: ``a key at body.x`` or ``body.x``."""
    stack: list[tuple[str, Any]] = [("body", doc)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, str):
            yield where, node
        elif isinstance(node, dict):
            for key, value in node.items():
                yield f"a key at {where}", key
                stack.append((f"{where}.{_shown(key)}", value))
        elif isinstance(node, list):
            stack.extend((f"{where}[{i}]", item) for i, item in enumerate(node))


def _shown(name: str) -> str:
    return name if NAMEABLE.fullmatch(name) else "…"


def _is_json(headers: list[tuple[bytes, bytes]]) -> bool:
    """FastAPI reads a body as JSON when it has no content type or an application/json or +json one."""
    value = next((v for k, v in headers if k.lower() == b"content-type"), None)
    if value is None:
        return True
    mime = MimeMessage()
    mime["content-type"] = value.decode("latin-1")
    subtype = mime.get_content_subtype()
    return mime.get_content_maintype() == "application" and (subtype == "json" or subtype.endswith("+json"))


class TextGuard:
    """The ASGI middleware: 422 before the app for a path, query or JSON body that is not text."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        problem = path_problem(scope.get("raw_path") or path.encode("utf-8", "surrogateescape"))
        problem = problem or query_problem(scope.get("query_string", b""))
        if problem is not None:
            await _refuse(send, "INVALID_REQUEST", problem)
            return
        if path.startswith(UNGUARDED_BODIES) or not _is_json(scope["headers"]):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: nothing to answer
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        problem = body_problem(body)
        if problem is not None:
            await _refuse(send, "INVALID_FIELD" if path in FIELD_CODED else "INVALID_REQUEST", problem)
            return
        await self.app(scope, _replay(body, receive), send)


async def _refuse(send: Send, code: str, problem: str) -> None:
    out = error_bytes(code, problem)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(out)).encode())]
    await send({"type": "http.response.start", "status": 422, "headers": headers})
    await send({"type": "http.response.body", "body": out})


def _replay(body: bytes, receive: Receive) -> Receive:
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
