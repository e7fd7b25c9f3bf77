"""The dashboard hub without a database: table -> area mapping, the burst throttle, fan-out per
tenant, and the page's routes (login by first message, 4401, static files, not in OpenAPI)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from psycopg_pool import AsyncConnectionPool
from starlette.websockets import WebSocketDisconnect

from contracts.topics import TopicNames
from projections.api import create_app
from projections.auth import mint_token
from projections.dashboard.coalesce import TABLE_AREAS, Coalescer, parse_change
from projections.dashboard.hub import Client, Hub
from projections.dashboard.migration import WATCHED, dashboard_migration
from projections.dashboard.snapshots import SNAPSHOTS
from projections.http.context import ApiDeps

SECRET = b"s" * 32


def test_every_watched_table_feeds_an_area_with_a_snapshot() -> None:
    assert set(WATCHED) == set(TABLE_AREAS)
    assert {a for areas in TABLE_AREAS.values() for a in areas} <= set(SNAPSHOTS)
    ddl = dashboard_migration()
    # Statement-level, with a transition table, one per event: never a per-row NOTIFY.
    creates = [s for s in ddl if s.startswith("CREATE TRIGGER")]
    assert len(creates) == 3 * len(WATCHED)
    assert all("FOR EACH STATEMENT" in s and "TABLE AS changed" in s for s in creates)
    assert not any("FOR EACH ROW" in s for s in ddl)


def test_parse_change() -> None:
    assert parse_change('{"table": "governance.votes", "tenants": ["acme"]}') == \
        parse_change('{"tenants": ["acme"], "table": "governance.votes"}')  # fmt: skip
    change = parse_change('{"table": "governance.votes", "tenants": ["acme", "globex"]}')
    assert change is not None and change.tenants == ("acme", "globex") and "proposals" in change.areas
    too_many = parse_change('{"table": "audit.events", "tenants": null}')
    assert too_many is not None and too_many.tenants is None and too_many.areas == ("flow",)
    for junk in ("", "[]", "{", '{"table": "x.y", "tenants": []}', '{"table": "audit.events", "tenants": 3}'):
        assert parse_change(junk) is None


def test_coalescer_leading_edge_then_one_trailing_push_per_window() -> None:
    c = Coalescer(window=0.1)
    key = ("acme", "proposals")
    assert c.mark(key, 10.0) == 10.0  # quiet key: due at once
    assert c.take_due(10.0) == [key]
    assert c.next_due() is None
    # A burst inside the window: one push, at the window's end.
    for i in range(3000):
        assert c.mark(key, 10.0 + i * 0.00001) == pytest.approx(10.1)
    assert c.take_due(10.05) == []
    assert c.take_due(10.1) == [key]
    assert c.take_due(10.2) == []  # nothing changed since: nothing to push
    # Keys are independent: another tenant's or area's change is not delayed by this one.
    assert c.mark(("globex", "proposals"), 10.15) == 10.15
    assert c.mark(("acme", "flow"), 10.15) == 10.15
    assert c.mark(key, 10.15) == pytest.approx(10.2)
    assert sorted(c.take_due(10.15)) == [("acme", "flow"), ("globex", "proposals")]
    assert c.next_due() == pytest.approx(10.2)
    c.forget("acme")
    assert c.next_due() is None and c.mark(key, 10.16) == 10.16


def test_the_flow_panel_is_pushed_at_most_once_a_second() -> None:
    """Its snapshot counts the tenant's audit rows: a steady stream of envelopes recounts once a second."""
    c = Coalescer(window=0.1)
    flow, votes = ("acme", "flow"), ("acme", "proposals")
    assert c.mark(flow, 5.0) == 5.0 and c.mark(votes, 5.0) == 5.0
    assert sorted(c.take_due(5.0)) == [flow, votes]
    assert c.mark(flow, 5.2) == pytest.approx(6.0) and c.mark(votes, 5.2) == pytest.approx(5.2)
    assert c.take_due(5.5) == [votes] and c.take_due(6.0) == [flow]


class QuietHub(Hub):
    """The hub with its LISTEN connection replaced: notifications are fed by the test."""

    async def _listen(self) -> None:
        self._listening.set()
        await asyncio.Event().wait()


def test_a_burst_of_notifications_becomes_a_few_pushes_to_the_right_tenant_only() -> None:
    reads: list[tuple[str, str]] = []
    version = {"n": 0}

    async def snap(_: AsyncConnectionPool, tenant: str, area: str) -> Any:
        reads.append((tenant, area))
        return {"tenant": tenant, "version": version["n"]}

    async def run() -> None:
        hub = QuietHub("postgresql://unused@127.0.0.1:1/none", None, window_s=0.05, snapshot_fn=snap)  # type: ignore[arg-type]
        acme, globex = await hub.join("acme"), await hub.join("globex")
        first = [json.loads(m) for m in await acme.next_messages()]
        assert [m["area"] for m in first] == list(SNAPSHOTS)  # the full snapshot, every area once
        await globex.next_messages()
        reads.clear()
        for i in range(3000):  # 3,000 statements' notifications within ~one window
            version["n"] = i
            hub.notified(json.dumps({"table": "governance.votes", "tenants": ["acme", "nobody-watching"]}))
        await asyncio.sleep(0.3)
        per_area = {a: reads.count(("acme", a)) for a in TABLE_AREAS["governance.votes"]}
        assert all(1 <= n <= 2 for n in per_area.values()), per_area  # leading + trailing edge at most
        assert not [r for r in reads if r[0] != "acme"]  # no read for a tenant nobody watches or not concerned
        pushed = {json.loads(m)["area"]: json.loads(m)["data"] for m in await acme.next_messages()}
        assert set(pushed) == set(TABLE_AREAS["governance.votes"])
        assert pushed["proposals"]["version"] == 2999  # the last change of the burst is pushed
        assert not globex._wake.is_set()  # the other tenant heard nothing
        hub.leave(acme)
        hub.notified(json.dumps({"table": "governance.votes", "tenants": ["acme"]}))
        assert hub._coalescer.next_due() is None  # nobody watches acme now: nothing is read
        await hub.close()

    asyncio.run(run())


def test_an_older_read_never_overwrites_a_newer_one() -> None:
    async def run() -> list[str]:
        client = Client("acme")
        client.offer("flow", 5, "new")
        client.offer("flow", 4, "old")  # started earlier, finished later
        return await client.next_messages()

    assert asyncio.run(run()) == ["new"]


def _app() -> FastAPI:
    deps = ApiDeps(app_db_url="postgresql://unused@127.0.0.1:1/none", token_secret=SECRET,
                   tenants={"acme": object()},  # type: ignore[dict-item]
                   names=TopicNames(), publisher=None, kafka_ok=lambda: False,  # type: ignore[arg-type]
                   projection_lag=dict, watermarks=lambda _: {}, projection_topics={})  # fmt: skip
    return create_app(deps)


@pytest.mark.parametrize(("first", "code"), [
    ('{"token": "garbage"}', "AUTH_INVALID"),
    ("not json", "AUTH_MISSING"),
    ('{"tok": "x"}', "AUTH_MISSING"),
    (json.dumps({"token": mint_token(b"t" * 32, "acme", "dash")}), "AUTH_INVALID"),  # another secret
    (json.dumps({"token": mint_token(SECRET, "elsewhere", "dash")}), "UNKNOWN_TENANT"),
    (json.dumps({"token": mint_token(SECRET, "acme", "dash", ttl_s=-10)}), "AUTH_EXPIRED"),
])  # fmt: skip
def test_a_bad_first_message_closes_the_socket_with_4401_and_the_reason(first: str, code: str) -> None:
    with TestClient(_app()).websocket_connect("/dashboard/ws") as ws:
        ws.send_text(first)
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_text()
    assert closed.value.code == 4401
    assert closed.value.reason.startswith(code)


def test_page_and_static_files_served_from_the_package_and_not_in_openapi() -> None:
    app = _app()
    client = TestClient(app)
    page = client.get("/dashboard")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "connect-src 'self'" in page.headers["content-security-policy"]
    assert "/dashboard/static/vendor/vis-network.min.js" in page.text and "//cdn" not in page.text
    js = client.get("/dashboard/static/vendor/vis-network.min.js")
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    assert "renderClamGraph" in client.get("/dashboard/static/app.js").text
    for bad in ("../routes.py", "..%2Froutes.py", ".hidden", "vendor/../../hub.py", "nope.js"):
        assert client.get(f"/dashboard/static/{bad}").status_code == 404, bad
    assert not [p for p in app.openapi()["paths"] if p.startswith("/dashboard")]
