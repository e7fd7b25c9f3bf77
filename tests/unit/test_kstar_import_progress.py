"""``hivemem import``'s bars count to what the import sends and what the kstar processor judges:
registrations and removals included, KMMS episodes sent but judged elsewhere (a bar never shows 12/10)."""

from __future__ import annotations

from typing import Any

from projections.kstar.io import plan_import, progress_totals

CHECKSUM = "sha256:" + "ab" * 32


def trace(i: int) -> dict[str, Any]:
    return {"id": f"tr-{i}", "timestamp": "2026-01-31T10:00:00.000Z", "situation": {"domain": "ops"},
            "task": {"goal": "restart"}, "action": {"type": "restart"}}  # fmt: skip


def bundle(traces: int, registrations: int, episodes: int) -> dict[str, Any]:
    regs = [{"kind": "trace_category", "record": {"name": f"cat-{i}", "domain": "ops", "required_fields": []}}
            for i in range(registrations)]  # fmt: skip
    told = [{"episode_id": f"ep-{i}", "user_id": "ana", "content": f"note {i}", "occurred_at": 1769936400000}
            for i in range(episodes)]  # fmt: skip
    memory = {"traces": [trace(i) for i in range(traces)], "perceptions": [], "facts": [], "skills": [],
              "control_tokens": []}  # fmt: skip
    return {"memory": memory, "extensions": {"hivemem": {"registrations": regs, "kmms_episodes": told}}}


def test_totals_count_registrations_removals_and_episodes() -> None:
    # replace reads nothing from the memory first: no database needed to plan it.
    plan = plan_import(None, "acme", "claw-1", bundle(10, 2, 3), "replace", None, CHECKSUM)  # type: ignore[arg-type]
    # one FORGET of the traces, 2 registrations, 10 records; the 3 episodes are sent, KMMS judges them.
    assert progress_totals(plan) == (1 + 2 + 10 + 3, 1 + 2 + 10)
    assert len(plan.ops) + len(plan.episodes) == progress_totals(plan)[0]


def test_totals_without_extras_are_the_records() -> None:
    plan = plan_import(None, "acme", "claw-1", bundle(4, 0, 0), "replace", ["perceptions"], CHECKSUM)  # type: ignore[arg-type]
    assert progress_totals(plan) == (1, 1)  # only the FORGET of perceptions: --types names what is imported
