"""Known-at, as a property on the real pipeline: for random interleavings of ingests into two abouts
and random question times, every KMP read returns exactly what was logged at or before that time —
nothing later (0 future leaks) and nothing missing."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hivemem.stack import Stack
from tests.integration.support import http

pytestmark = pytest.mark.integration
T0 = 1_767_225_600_000

writes = st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 10_000), st.integers(1, 3)),
                  min_size=2, max_size=7)  # fmt: skip


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=writes, picks=st.lists(st.floats(0, 1), min_size=3, max_size=3))
def test_no_read_sees_the_future(stack: Stack, plan: list[tuple[str, int, int]], picks: list[float]) -> None:
    run = uuid.uuid4().hex[:6]
    abouts = {k: f"leak-{run}-{k}" for k in ("a", "b")}
    known: list[tuple[str, str, int]] = []  # (about, entry ref, knownAt)
    with http(stack, "kmp-leak", "writer") as h:
        for i, (which, minute, n) in enumerate(plan):
            about = abouts[which]
            entries = [{"id": f"e{i}-{j}", "kind": "observation", "text": f"zebra sighting {run} number {i}-{j}",
                        "occurredAt": T0 + minute * 60_000} for j in range(n)]  # fmt: skip
            evidence = [{"id": f"v{i}", "text": "seen", "supports": [f"e{i}-0"]}]
            r = h.post("/kmp/v1/ingest?wait_ms=20000", json={"about": about, "entries": entries, "evidence": evidence})
            assert r.status_code == 200, r.text
            known += [(about, f"e{i}-{j}", int(r.json()["knownAt"])) for j in range(n)]
        times = sorted({k for _, _, k in known})
        # Question times: just before the first write, between writes, at one, and after the last.
        candidates = [times[0] - 1, *times, *[t + 1 for t in times]]
        for pick in picks:
            t = candidates[int(pick * (len(candidates) - 1))]
            for about in abouts.values():
                expect = {ref for a, ref, k in known if a == about and k <= t}
                page: dict[str, Any] = h.post("/kmp/v1/forward", json={"about": about, "limit": 200,
                                                                      "knownAt": t}).json()  # fmt: skip
                assert {e["ref"] for e in page["entries"]} == expect
                assert all(e["knownAt"] <= t for e in page["entries"])
                wake = h.post("/kmp/v1/wake", json={"about": about, "knownAt": t}).json()
                assert wake["entriesSeen"] == len(expect)
            scope = {"mode": "ABOUTS", "abouts": list(abouts.values())}
            asked = h.post("/kmp/v1/ask", json={"question": f"zebra {run}", "knownAt": t, "limit": 50,
                                                "answerPolicy": "BEST_EFFORT", "scope": scope}).json()  # fmt: skip
            assert {(b["about"], b["ref"]) for b in asked["because"]} == {(a, ref) for a, ref, k in known if k <= t}
            assert all(v["knownAt"] <= t for v in asked["proof"]["evidence"])


def test_a_read_without_known_at_echoes_the_instant_that_repeats_it(stack: Stack) -> None:
    about = f"echo-{uuid.uuid4().hex[:6]}"
    with http(stack, "kmp-leak", "writer") as h:
        entry = {"id": "e1", "kind": "observation", "text": "the pump restarts nightly", "occurredAt": T0}
        r = h.post("/kmp/v1/ingest", params={"waitMs": 20000}, json={"about": about, "entries": [entry]})
        assert r.status_code == 200, r.text
        wrote = int(r.json()["knownAt"])
        now = h.post("/kmp/v1/forward", json={"about": about, "limit": 10}).json()
        echoed = now["knownAt"]
        # A real instant (ms since the epoch, at or after the write), not a far-future sentinel.
        assert wrote <= echoed < wrote + 3_600_000, (wrote, echoed)
        again = h.post("/kmp/v1/forward", json={"about": about, "limit": 10, "knownAt": echoed}).json()
        assert again["entries"] == now["entries"] and [e["ref"] for e in now["entries"]] == ["e1"]
        assert h.post("/kmp/v1/wake", json={"about": about}).json()["knownAt"] >= wrote
