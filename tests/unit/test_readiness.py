"""/readyz's rule for one processor (projections.http.health.processor_check): alive or not, and behind or
not, apart. Lag never makes a processor not ok."""

from __future__ import annotations

import pytest

from projections.http.health import MISSING, processor_check


def check(state: str, age: float, lag: int) -> tuple[bool, bool]:
    c = processor_check(state, age, lag, None, stale_s=15.0, behind_lag=10_000)
    return c.ok, c.behind


@pytest.mark.parametrize(
    ("state", "age", "lag", "ok", "behind"),
    [
        ("running", 0.4, 0, True, False),
        ("running", 0.4, 10_000, True, False),
        ("running", 0.4, 10_001, True, True),  # far behind and catching up: still ready
        ("running", 0.4, 250_000, True, True),
        ("reconnecting", 9.0, 0, True, False),  # waiting out an outage (a model server down), heartbeating
        ("reconnecting", 9.0, 40_000, True, True),
        ("running", 15.0, 0, False, False),  # stuck: no heartbeat for 15 s
        ("reconnecting", 60.0, 0, False, False),
        ("stopped", 0.1, 0, False, False),  # dead
        ("stopped", 0.1, 20_000, False, True),
    ],
)
def test_alive_and_behind_are_judged_apart(state: str, age: float, lag: int, ok: bool, behind: bool) -> None:
    assert check(state, age, lag) == (ok, behind)


def test_the_check_carries_what_it_judged() -> None:
    c = processor_check("running", 1.23456, 12, 1_795_000_000_000, stale_s=15.0, behind_lag=10_000)
    body = c.model_dump(by_alias=True)
    assert body == {"ok": True, "state": "running", "heartbeatAgeS": 1.235, "lag": 12, "behind": False,
                    "lastBatchAt": 1_795_000_000_000}  # fmt: skip


def test_a_processor_that_never_started_is_not_ok() -> None:
    assert not MISSING.ok and MISSING.state == "missing" and MISSING.lag is None and not MISSING.behind
