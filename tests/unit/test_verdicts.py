"""projections/verdicts.py: the one poller every write route's ``?wait`` runs."""

from __future__ import annotations

import asyncio
from typing import Any

from projections.verdicts import poll_verdict


def test_poll_asks_again_until_there_is_a_verdict() -> None:
    asked: list[tuple[str, str]] = []

    async def lookup(pool: Any, tenant: str, event_id: str) -> str | None:
        asked.append((tenant, event_id))
        return "STORED" if len(asked) == 3 else None

    found = asyncio.run(poll_verdict(lookup, None, "t1", "e1", wait_s=5, first_delay=0.001))  # type: ignore[arg-type]
    assert found == "STORED" and asked == [("t1", "e1")] * 3


def test_poll_gives_up_with_none_once_the_wait_is_over() -> None:
    asked = 0

    async def lookup(pool: Any, tenant: str, event_id: str) -> str | None:
        nonlocal asked
        asked += 1
        return None

    assert asyncio.run(poll_verdict(lookup, None, "t1", "e1", wait_s=0)) is None  # type: ignore[arg-type]
    assert asked == 1  # asked once even with no time to wait
