"""Query parameters: one spelling (camelCase, like every JSON field), the snake_case one accepted,
and a parameter the route does not read refused instead of ignored.

- ``CamelQuery`` (ASGI, before routing) rewrites each query key written in snake_case to its
  camelCase form (``wait_ms`` → ``waitMs``, ``user_id`` → ``userId``); values and their encoding
  are left as sent. Routes declare the camelCase name only, so OpenAPI shows one spelling.
- ``refuse_unknown_query`` (an app-wide dependency) answers 422 ``UNKNOWN_PARAMETER`` for a
  query key the matched route does not read: ``?userid=ana`` must not read as "no user" and
  answer ``[]``. The detail lists what the route reads; it quotes the unknown key only bounded
  and escaped (a key is a name, never a value).
- The same dependency answers 422 ``REPEATED_PARAMETER`` for a key sent twice when the route reads
  it as one value (every route here does): FastAPI would take the last value silently, so
  ``?waitMs=[]&waitMs=0`` would pass as ``waitMs=0``. The snake_case and camelCase spellings of one
  name are the same key.
"""

from __future__ import annotations

from urllib.parse import quote, unquote_to_bytes

from fastapi import Request
from fastapi._compat.shared import field_annotation_is_sequence
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from pydantic.alias_generators import to_camel
from starlette.types import ASGIApp, Receive, Scope, Send

from projections.http.errors import ApiError


def camel_key(raw: bytes) -> bytes:
    """A raw (still percent-encoded) query key in camelCase, if it is a snake_case name."""
    if b"_" not in raw or b"%" in raw:
        return raw
    text = raw.decode("ascii", "replace")
    if not text.replace("_", "").isalnum() or text.startswith("_"):
        return raw
    return quote(to_camel(text)).encode()


def camel_query(query: bytes) -> bytes:
    """``a_b=1&c=2`` → ``aB=1&c=2``; separators, order and values unchanged."""
    if b"_" not in query:
        return query
    out = []
    for pair in query.split(b"&"):
        key, eq, value = pair.partition(b"=")
        out.append(camel_key(key) + eq + value)
    return b"&".join(out)


class CamelQuery:
    """Rewrites snake_case query keys to camelCase before the router reads them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("query_string"):
            scope = {**scope, "query_string": camel_query(scope["query_string"])}
        await self.app(scope, receive, send)


def _reads(dep: Dependant) -> tuple[frozenset[str], frozenset[str]]:
    """(every query name the dependant reads, those it reads as a list), its dependencies' included."""
    own = {p.alias for p in dep.query_params}
    lists = {p.alias for p in dep.query_params if field_annotation_is_sequence(p.field_info.annotation)}
    for sub in dep.dependencies:
        sub_own, sub_lists = _reads(sub)
        own |= sub_own
        lists |= sub_lists
    return frozenset(own), frozenset(lists)


_CACHED = "_hivemem_query_names"  # kept on the route object itself: routes are unhashable, and ids get reused


def route_query_names(route: APIRoute) -> tuple[frozenset[str], frozenset[str]]:
    """The query names a route reads and those read as lists, dependencies' included (computed once per route)."""
    names: tuple[frozenset[str], frozenset[str]] | None = getattr(route, _CACHED, None)
    if names is None:
        names = _reads(route.dependant)
        setattr(route, _CACHED, names)
    return names


def _shown(key: str) -> str:
    key = key if len(key) <= 40 else key[:40] + "…"
    return key.encode("ascii", "backslashreplace").decode("ascii")


async def refuse_unknown_query(request: Request) -> None:
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or not request.scope.get("query_string"):
        return
    reads, lists = route_query_names(route)
    seen: set[str] = set()
    for pair in request.scope["query_string"].split(b"&"):
        raw = pair.partition(b"=")[0]
        if not raw:
            continue
        key = unquote_to_bytes(raw).decode("utf-8", "backslashreplace")
        if key not in reads:
            known = ", ".join(sorted(reads)) or "none"
            raise ApiError(422, "UNKNOWN_PARAMETER",
                           f"unknown query parameter {_shown(key)!r}; this route reads: {known}")  # fmt: skip
        if key in seen and key not in lists:
            raise ApiError(422, "REPEATED_PARAMETER",
                           f"query parameter {_shown(key)!r} is sent more than once; it takes one value")  # fmt: skip
        seen.add(key)
