"""Query parameters: camelCase declared, snake_case read as the same, unknown ones refused."""

from __future__ import annotations

import asyncio

import httpx

from projections.http.query_names import camel_query
from tests.unit.test_mcp_tools import app


def test_snake_keys_become_camel_and_nothing_else_moves() -> None:
    assert camel_query(b"user_id=a_b&waitMs=5&include_superseded=true") == b"userId=a_b&waitMs=5&includeSuperseded=true"
    assert camel_query(b"a=1&&b") == b"a=1&&b"
    # Not names: left as sent (an encoded key, a leading underscore, punctuation).
    for raw in (b"user%5Fid=1", b"_x=1", b"a_b.c=1"):
        assert camel_query(raw) == raw


def get(path: str, method: str = "GET") -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app())
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            return await c.request(method, path, json={"about": "0"} if method == "POST" else None)

    return asyncio.run(go())


def test_an_unknown_query_parameter_is_refused_before_anything_else() -> None:
    r = get("/api/v1/memory/erasures?userid=ana")
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["code"] == "UNKNOWN_PARAMETER"
    assert "'userid'" in body["detail"] and "userId" in body["detail"]  # names what the route reads
    # Both spellings of a real parameter get past the check (to the bearer check: no token here).
    for ok in ("userId=ana", "user_id=ana"):
        assert get(f"/api/v1/memory/erasures?{ok}").json()["code"] == "AUTH_MISSING", ok


def test_a_one_value_parameter_sent_twice_is_refused_not_read_as_its_last_value() -> None:
    # Schemathesis found it: ?waitMs=[]&waitMs=0 was accepted as waitMs=0.
    for twice in ("userId=ana&userId=bob", "userId=ana&user_id=bob", "userId=ana&userId=ana"):
        r = get(f"/api/v1/memory/erasures?{twice}")
        assert r.status_code == 422 and r.json()["code"] == "REPEATED_PARAMETER", twice
        assert "'userId'" in r.json()["detail"]
    r = get("/kmp/v1/ingest?waitMs=%5B%5D&waitMs=0", method="POST")
    assert r.status_code == 422 and r.json()["code"] == "REPEATED_PARAMETER", r.text
    assert get("/kmp/v1/ingest?waitMs=0", method="POST").json()["code"] == "AUTH_MISSING"


def test_an_unknown_key_is_quoted_bounded_and_escaped() -> None:
    r = get("/api/v1/claws?" + "k" * 500 + "=1")
    assert r.json()["code"] == "UNKNOWN_PARAMETER" and len(r.json()["detail"]) < 200
    r = get("/api/v1/claws?a%00b=1")
    assert r.json()["code"] in ("UNKNOWN_PARAMETER", "INVALID_REQUEST") and "\x00" not in r.json()["detail"]


def test_openapi_shows_query_parameters_camel_case_only() -> None:
    doc = app().openapi()
    names = {p["name"] for ops in doc["paths"].values() for op in ops.values() for p in op.get("parameters", [])
             if p["in"] == "query"}  # fmt: skip
    assert names and not [n for n in names if "_" in n], names
