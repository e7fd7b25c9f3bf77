"""The dashboard in a real browser (Debian's headless Chromium driven by Playwright): log in, see a
vote arrive and a decision appear without a reload and without HTTP polling, see a tenant's data
and not another's; a screenshot of the main view is kept in tests/artifacts/dashboard.png."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from hivemem.stack import Stack
from projections.auth import mint_token
from tests.integration.governance_support import beat_all, fleet, propose, unique, vote

pytestmark = pytest.mark.integration

CHROMIUM = os.environ.get("HIVEMEM_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
TIMEOUT_MS = 30_000

playwright_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).is_file():
        pytest.skip(f"no Chromium at {CHROMIUM}: ./run.sh test installs Debian's chromium package (as root)")
    with playwright_api.sync_playwright() as p:
        # Never `playwright install`: the browser download is not reachable; the distribution's Chromium is.
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def login(browser: object, stack: Stack, tenant: str, token: str | None = None) -> object:
    """A fresh browser context (own sessionStorage) on /dashboard, logged in as ``tenant``."""
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()  # type: ignore[attr-defined]
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(f"{stack.api_url}/dashboard")
    page.fill("#token", token or mint_token(stack.settings.load_config().token_secret, tenant, "dash"))
    page.click("#login-button")
    return page


def test_dashboard_live_votes_decision_tenant_isolation_and_screenshot(stack: Stack, browser: object) -> None:
    tenant, other = "acme", "globex"
    page = login(browser, stack, tenant)
    page.wait_for_selector(f'body[data-tenant="{tenant}"]')  # type: ignore[attr-defined]
    for area in ("flow", "claws", "proposals", "facts", "reputation", "kmms", "graph"):
        page.wait_for_selector(f'#{area}[data-loaded="1"]', state="attached")  # type: ignore[attr-defined]
    # From here on the page may only listen: no reload, no HTTP request, one WebSocket.
    page.evaluate("window.__notReloaded = true")  # type: ignore[attr-defined]
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))  # type: ignore[attr-defined]

    names = [unique("dash-claw") for _ in range(3)]
    claws = fleet(stack, tenant, names)
    beat_all(claws)
    for name in names:  # presence arrives by push
        page.wait_for_selector(f'#claws [data-claw="{name}"] .dot.active')  # type: ignore[attr-defined]

    pid, fact_key = unique("dash-p"), unique("dash/fact")
    propose(claws[names[0]], pid, fact_key, "Dashboards push, they never poll")
    card = f'#proposals [data-proposal-id="{pid}"]'
    page.wait_for_selector(f"{card} .status.OPEN")  # type: ignore[attr-defined]

    vote(claws[names[0]], pid)
    page.wait_for_selector(f'{card} .vote[data-claw="{names[0]}"]')  # type: ignore[attr-defined]
    assert page.inner_text(f"{card} .status") == "OPEN"  # type: ignore[attr-defined]  # one vote of three: no decision

    beat_all(claws)  # fresh presence: all three in the quorum basis at the next vote
    vote(claws[names[1]], pid)
    page.wait_for_selector(f"{card} .status.APPROVED")  # type: ignore[attr-defined]
    page.wait_for_selector(f'{card} .vote[data-claw="{names[1]}"]')  # type: ignore[attr-defined]
    page.wait_for_selector(f'#facts [data-fact-key="{fact_key}"]')  # type: ignore[attr-defined]  # v1 published
    assert page.inner_text(f"{card} .decision").startswith("APPROVED: ")  # type: ignore[attr-defined]
    assert page.evaluate("window.__notReloaded === true")  # type: ignore[attr-defined]
    assert requests == [], f"the dashboard made HTTP requests after login: {requests}"

    # Another tenant's dashboard: its own data, none of the first tenant's.
    other_page = login(browser, stack, other)
    other_page.wait_for_selector(f'body[data-tenant="{other}"]')  # type: ignore[attr-defined]
    other_page.wait_for_selector('#proposals[data-loaded="1"]', state="attached")  # type: ignore[attr-defined]
    other_page.wait_for_selector('#claws[data-loaded="1"]', state="attached")  # type: ignore[attr-defined]
    assert other_page.locator(f'[data-proposal-id="{pid}"]').count() == 0  # type: ignore[attr-defined]
    assert other_page.locator(f'[data-fact-key="{fact_key}"]').count() == 0  # type: ignore[attr-defined]
    assert other_page.locator(f'[data-claw="{names[0]}"]').count() == 0  # type: ignore[attr-defined]
    # ... and while it watches, the first tenant's next vote does not reach it.
    vote(claws[names[2]], pid)
    # After the decision: refused by governance, shown on the vote as it happens.
    page.wait_for_selector(f'{card} .vote.refused[data-claw="{names[2]}"]:has-text("PROPOSAL_CLOSED")')  # type: ignore[attr-defined]
    assert other_page.locator(f'[data-proposal-id="{pid}"]').count() == 0  # type: ignore[attr-defined]

    # A token that does not verify: the socket is closed with 4401 and the page says why.
    bad = login(browser, stack, tenant, token="not-a-token")
    bad.wait_for_selector("#login-error:has-text('AUTH_INVALID')")  # type: ignore[attr-defined]
    # A token that expires while its socket is open: the socket closes then, and the page asks for a new one.
    brief = login(browser, stack, tenant, token=mint_token(stack.settings.load_config().token_secret, tenant, "dash",
                                                           ttl_s=4))  # fmt: skip
    brief.wait_for_selector(f'body[data-tenant="{tenant}"]')  # type: ignore[attr-defined]
    brief.wait_for_selector("#login-error:has-text('AUTH_EXPIRED')", timeout=15_000)  # type: ignore[attr-defined]

    # CLAM: a claw of this tenant learns a fact; the counters and the graph follow, pushed.
    claw_token = mint_token(stack.settings.load_config().token_secret, tenant, "dash", claw_id=unique("clam"))
    with httpx.Client(base_url=stack.api_url, headers={"Authorization": f"Bearer {claw_token}"}, timeout=30) as h:
        r = h.post("/clam/v1/perceive?wait_ms=20000", json={"prompt": "I use an ESP32 for the sensors."})
        assert r.status_code == 200 and r.json()["status"] == "DONE", r.text
    page.wait_for_selector("#clam-counts:has-text('semantic 1')")  # type: ignore[attr-defined]
    assert other_page.locator("#clam-counts:has-text('semantic 1')").count() == 0  # type: ignore[attr-defined]

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "dashboard.png"
    page.wait_for_timeout(1500)  # type: ignore[attr-defined]  # let the graph layout settle
    page.screenshot(path=str(shot), full_page=True)  # type: ignore[attr-defined]
    assert shot.stat().st_size > 10_000
    print(f"dashboard screenshot: {shot}")
