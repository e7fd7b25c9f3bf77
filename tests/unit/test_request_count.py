"""``RequestCount`` (projections/http/request_count.py): each HTTP request counted once, by method, the route
template the router matched and the status the client got; a route that raises counts as a 500."""

from __future__ import annotations

import asyncio

import httpx
from fastapi import FastAPI, HTTPException
from prometheus_client import CollectorRegistry, Counter

from projections.http.request_count import RequestCount


def _app() -> tuple[FastAPI, CollectorRegistry]:
    registry = CollectorRegistry()
    counter = Counter("requests", "HTTP requests", ["method", "route", "status"], registry=registry)
    app = FastAPI()

    @app.get("/items/{item}")
    async def item(item: str) -> dict[str, str]:
        if item == "missing":
            raise HTTPException(404, "no such item")
        return {"item": item}

    @app.post("/boom")
    async def boom() -> None:
        raise RuntimeError("a bug")

    app.add_middleware(RequestCount, counter=counter)
    return app, registry


def _count(registry: CollectorRegistry, method: str, route: str, status: str) -> float:
    got = registry.get_sample_value("requests_total", {"method": method, "route": route, "status": status})
    return got or 0.0


def test_each_request_is_counted_by_method_route_and_status() -> None:
    app, registry = _app()

    async def calls() -> list[int]:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return [(await client.get("/items/a")).status_code, (await client.get("/items/b")).status_code,
                    (await client.get("/items/missing")).status_code, (await client.get("/nowhere")).status_code,
                    (await client.post("/boom")).status_code]  # fmt: skip

    assert asyncio.run(calls()) == [200, 200, 404, 404, 500]
    assert _count(registry, "GET", "/items/{item}", "200") == 2
    assert _count(registry, "GET", "/items/{item}", "404") == 1
    assert _count(registry, "GET", "unmatched", "404") == 1
    assert _count(registry, "POST", "/boom", "500") == 1
