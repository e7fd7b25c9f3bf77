"""The dashboard in a real browser (Debian's headless Chromium driven by Playwright): log in, see a
vote arrive and a decision appear without a reload and without HTTP polling, see a tenant's data
and not another's, with no console error on any page; presence words that match the dot, dated times,
charts with their units, a graph that fits its panel; a full-page screenshot is kept in
tests/artifacts/dashboard.png (its path is printed)."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from hivemem.stack import Stack
from projections.auth import mint_token
from tests.integration.caml_support import anomaly, caml
from tests.integration.governance_support import beat_all, fleet, propose, unique, vote

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.integration

CHROMIUM = os.environ.get("HIVEMEM_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
TIMEOUT_MS = 30_000
STAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")  # every time on the page has its date

playwright_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).is_file():
        pytest.skip(f"no Chromium at {CHROMIUM}: ./run.sh test installs Debian's chromium package (as root)")
    with playwright_api.sync_playwright() as p:
        # Never `playwright install`: the browser download is not reachable; the distribution's Chromium is.
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def login(browser: Browser, stack: Stack, tenant: str, errors: list[str], token: str | None = None) -> Page:
    """A fresh browser context (own sessionStorage) on /dashboard, logged in as ``tenant``; the page's
    console errors and uncaught exceptions are appended to ``errors`` (from before the page loads)."""
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.on("console", lambda m: errors.append(f"{tenant}: {m.text} {m.location}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"{tenant}: uncaught {e}"))
    page.goto(f"{stack.api_url}/dashboard")
    page.fill("#token", token or mint_token(stack.settings.load_config().token_secret, tenant, "dash"))
    page.click("#login-button")
    return page


def test_dashboard_live_votes_decision_tenant_isolation_and_screenshot(stack: Stack, browser: Browser) -> None:
    tenant, other = "acme", "globex"
    errors: list[str] = []
    page = login(browser, stack, tenant, errors)
    page.wait_for_selector(f'body[data-tenant="{tenant}"]')
    for area in ("flow", "claws", "proposals", "facts", "reputation", "kmms", "graph"):
        page.wait_for_selector(f'#{area}[data-loaded="1"]', state="attached")
    # From here on the page may only listen: no reload, no HTTP request, one WebSocket.
    page.evaluate("window.__notReloaded = true")
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))

    names = [unique("dash-claw") for _ in range(3)]
    claws = fleet(stack, tenant, names)
    beat_all(claws)
    for name in names:  # presence arrives by push
        page.wait_for_selector(f'#claws [data-claw="{name}"] .dot.active')

    pid, fact_key = unique("dash-p"), unique("dash/fact")
    propose(claws[names[0]], pid, fact_key, "Dashboards push, they never poll")
    card = f'#proposals [data-proposal-id="{pid}"]'
    page.wait_for_selector(f"{card} .status.OPEN")

    vote(claws[names[0]], pid)
    page.wait_for_selector(f'{card} .vote[data-claw="{names[0]}"]')
    assert page.inner_text(f"{card} .status") == "OPEN"  # one vote of three: no decision

    beat_all(claws)  # fresh presence: all three in the quorum basis at the next vote
    vote(claws[names[1]], pid)
    page.wait_for_selector(f"{card} .status.APPROVED")
    page.wait_for_selector(f'{card} .vote[data-claw="{names[1]}"]')
    page.wait_for_selector(f'#facts [data-fact-key="{fact_key}"]')  # v1 published
    assert page.inner_text(f"{card} .decision").startswith("APPROVED: ")
    assert page.evaluate("window.__notReloaded === true")
    assert requests == [], f"the dashboard made HTTP requests after login: {requests}"

    # Another tenant's dashboard: its own data, none of the first tenant's.
    other_page = login(browser, stack, other, errors)
    other_page.wait_for_selector(f'body[data-tenant="{other}"]')
    other_page.wait_for_selector('#proposals[data-loaded="1"]', state="attached")
    other_page.wait_for_selector('#claws[data-loaded="1"]', state="attached")
    assert other_page.locator(f'[data-proposal-id="{pid}"]').count() == 0
    assert other_page.locator(f'[data-fact-key="{fact_key}"]').count() == 0
    assert other_page.locator(f'[data-claw="{names[0]}"]').count() == 0
    # ... and while it watches, the first tenant's next vote does not reach it.
    vote(claws[names[2]], pid)
    # After the decision: refused by governance, shown on the vote as it happens.
    page.wait_for_selector(f'{card} .vote.refused[data-claw="{names[2]}"]:has-text("PROPOSAL_CLOSED")')
    assert other_page.locator(f'[data-proposal-id="{pid}"]').count() == 0

    # A token that does not verify: the socket is closed with 4401 and the page says why.
    bad = login(browser, stack, tenant, errors, token="not-a-token")
    bad.wait_for_selector("#login-error:has-text('AUTH_INVALID')")
    # A token that expires while its socket is open: the socket closes then, and the page asks for a new one.
    secret = stack.settings.load_config().token_secret
    brief = login(browser, stack, tenant, errors, token=mint_token(secret, tenant, "dash", ttl_s=4))
    brief.wait_for_selector(f'body[data-tenant="{tenant}"]')
    brief.wait_for_selector("#login-error:has-text('AUTH_EXPIRED')", timeout=15_000)

    # CLAM: a claw of this tenant learns a fact; the counters and the graph follow, pushed.
    claw_token = mint_token(stack.settings.load_config().token_secret, tenant, "dash", claw_id=unique("clam"))
    with httpx.Client(base_url=stack.api_url, headers={"Authorization": f"Bearer {claw_token}"}, timeout=30) as h:
        r = h.post("/clam/v1/perceive?wait_ms=20000", json={"prompt": "I use an ESP32 for the sensors."})
        assert r.status_code == 200 and r.json()["status"] == "DONE", r.text
    semantic = '#clam-counts [data-count="semantic"] b:text-is("1")'
    page.wait_for_selector(semantic)
    assert other_page.locator(semantic).count() == 0

    # CAML: two claws of this tenant share observations, another operator confirms one: the reputation
    # table and chart follow (3 changes), and the other tenant's page shows none of them.
    authors = [caml(stack, tenant, unique("rep")) for _ in range(2)]
    first = f"Checkout {unique('E')} fails after a pool resize"
    oid = anomaly(authors[0], first, domain="technology", wait_ms=30_000)  # the models may still be loading
    anomaly(authors[0], f"Nightly export {unique('job')} stalls on the orders table", domain="technology")
    anomaly(authors[1], f"Invoice queue {unique('q')} doubles at month end", domain="finance")
    caml(stack, other, unique("checker")).validate(oid, "CONFIRMED")
    page.locator("#reputation tbody tr[data-claw]").nth(1).wait_for()  # two rows at least
    page.wait_for_selector("#rep-history:not([hidden]) .uplot")
    assert other_page.locator(f"#observations [data-observation-id='{oid}']").count() == 0

    check_readable(page)
    # An unhealthy claw: absent, and the words say so beside the grey dot.
    sick_name = unique("dash-sick")
    sick = fleet(stack, tenant, [sick_name])[sick_name]
    sick.heartbeat(healthy=False)
    row = page.locator(f'#claws li[data-claw="{sick_name}"][data-presence="absent"]')
    row.wait_for()
    assert "absent" in row.locator(".presence").inner_text() and row.locator(".dot.active").count() == 0

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "dashboard.png"
    check_graph_fits(page)  # also waits for the graph layout to settle
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    print(f"dashboard screenshot: {shot}")
    assert errors == [], f"console errors: {errors}"


def check_readable(page: Page) -> None:
    """Presence words match the dots, times carry a date, both charts say their units."""
    rows = page.evaluate("""() => [...document.querySelectorAll('#claws li[data-claw]')].map((li) => ({
        present: li.dataset.presence, dot: li.querySelector('.dot').classList.contains('active'),
        words: li.querySelector('.presence').textContent, seen: li.querySelector('.seen').textContent}))""")
    assert rows
    for r in rows:
        assert r["dot"] == (r["present"] == "present") and r["words"].startswith(r["present"]), r
        assert STAMP.search(r["seen"]), r
    assert STAMP.search(page.inner_text("#facts"))
    assert STAMP.search(page.inner_text("#reputation tbody"))
    legend = page.inner_text("#throughput .u-legend")
    assert "envelopes/s" in legend and "records" in legend and STAMP.search(legend), legend


def check_graph_fits(page: Page) -> None:
    """Every node of the graph, label included, lies inside the panel's canvas once the layout settled."""
    outside = """() => {
        const box = document.querySelector('#graph').getBoundingClientRect();
        return graphNodes.getIds().filter((id) => {
            const b = network.getBoundingBox(id);
            const tl = network.canvasToDOM({ x: b.left, y: b.top });
            const br = network.canvasToDOM({ x: b.right, y: b.bottom });
            return tl.x < 0 || tl.y < 0 || br.x > box.width || br.y > box.height;
        });
    }"""
    if not poll(page, f"() => ({outside})().length === 0", timeout_ms=15_000):
        pytest.fail(f"graph nodes outside the panel: {page.evaluate(outside)}")
    page.wait_for_timeout(500)  # the last fit drawn


def poll(page: Page, predicate: str, timeout_ms: int) -> bool:
    """Whether ``predicate`` (a JavaScript function) returned true within ``timeout_ms``, asked every 100 ms.

    Not ``page.wait_for_function``: once its first try is false, Playwright polls at each animation
    frame by evaluating the predicate's text in the page (``globalThis.eval``), which the dashboard's
    Content-Security-Policy (``script-src 'self'``, no ``'unsafe-eval'``) refuses with an EvalError, so
    that wait failed whenever the layout had not settled at the first try. ``page.evaluate`` runs through
    the browser's debugging protocol, which the page's policy does not govern."""
    for _ in range(max(1, timeout_ms // 100)):
        if page.evaluate(predicate):
            return True
        page.wait_for_timeout(100)
    return bool(page.evaluate(predicate))
