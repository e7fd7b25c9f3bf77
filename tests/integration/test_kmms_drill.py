"""The drill from a fact to its episodes (governance.kmms.drill, projections.kmms.drill) on the real read
model: HTTP -> gate -> kmms processors -> Postgres, then the drill's SQL in process. A residence told in
passing (Lisbon), then changed (Porto): the current fact brings its episode and the superseded version's;
the old fact, asked about the past, brings its own and the one that ended it; nothing after ``as_of`` joins,
and a version logged after ``as_of`` steers nothing. Over HTTP, a question about the present finds both."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from hivemem.stack import Stack
from producers.memory_client import Hit, MemoryClient
from projections.kmms.nodes import NODE_COLUMNS, NodeRow, node_of
from projections.kmms.search import Memory, UnitHit
from tests.conftest import wait_until
from tests.integration.kmms_support import (
    SEED_RULES,
    app_pool,
    converse,
    memory,
    search_in_process,
    unit_vectors,
    with_rules,
)

pytestmark = pytest.mark.integration

CLAW = f"drill-{uuid.uuid4().hex[:6]}"
HISTORY = [  # (date, what the user said, the assistant's reply)
    ("2026-01-10", "What's a good substitute for eggs in pancakes? Anyway, I live in Lisbon, near the river.",
     "A mashed banana or a spoon of yoghurt works well."),
    ("2026-01-25", "My flat in Lisbon has a tiny balcony where I grow basil. How often should I water it?",
     "When the top of the soil is dry, usually every two days in summer."),
    ("2026-02-02", "How long should I rest pizza dough?", "At least an hour, or overnight in the fridge."),
    ("2026-02-14", "I cooked a mushroom risotto for my friends. Can I freeze the leftovers?",
     "Yes, for up to three months in an airtight box."),
    ("2026-03-20", "Which herbs go with roast potatoes? By the way, I moved to Porto last week.",
     "Rosemary and thyme are the classics."),
    ("2026-04-05", "The new apartment in Porto is bigger. Which plants suit a north-facing window?",
     "Ferns, pothos and snake plants do well in low light."),
    ("2026-04-12", "What's a quick weeknight pasta?", "Garlic, chili and olive oil: ready in fifteen minutes."),
]  # fmt: skip


def _ms(day: str) -> int:
    return int(datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp() * 1000)


@pytest.fixture(scope="module")
def mover(stack: Stack) -> tuple[MemoryClient, list[str]]:
    mem = memory(stack, "mem-b", claw=CLAW, user_id="rui")
    ids = converse(mem, HISTORY)
    wait_until(lambda: len(_residences(mem)) == 2, timeout=120, interval=0.5, what="the two residence versions")
    mem.wait_indexed(ids, timeout_s=120)
    return mem, ids


def _residences(mem: MemoryClient) -> list[Hit]:
    return [f for f in mem.facts(key="residence", history=True) if f.layer == 2]


def _drill(stack: Stack, node_ids: list[str], ranked: list[UnitHit], kind: str, as_of: str) -> list[UnitHit]:
    from projections.kmms import drill
    from projections.queries import tenant_tx

    async def run() -> list[UnitHit]:
        async with app_pool(stack, max_size=1) as pool, tenant_tx(pool, "mem-b") as conn:
            cur = await conn.execute(f"SELECT {NODE_COLUMNS} FROM kmms.kmms_nodes n WHERE n.tenant = 'mem-b' "
                                     "AND n.node_id = ANY(%s)", (node_ids,))  # fmt: skip
            rows = {str(r[0]): r for r in await cur.fetchall()}
            cur = await conn.execute("SELECT model, embedding::text FROM kmms.kmms_vectors WHERE "
                                     "tenant = 'mem-b' AND unit_id = %s", (node_ids[0],))  # fmt: skip
            model, vector = (await cur.fetchall())[0]
            # The fact's own vector as the question's: similarity 1, so it drills.
            nodes: list[NodeRow] = [node_of(rows[n], similarity=1.0) for n in node_ids]
            floats = [float(x) for x in str(vector).strip("[]").split(",")]
            # The drill is an opt-in rule (docs/kmms.md): searched with it on.
            return await drill.drill_facts(conn, Memory("mem-b", CLAW, "rui"), ranked, nodes, kind,
                                                _ms(as_of), floats, str(model), {},
                                                cfg=with_rules(["drill"]))  # fmt: skip

    return asyncio.run(run())


def test_the_current_fact_brings_its_episode_then_the_superseded_versions(
    stack: Stack, mover: tuple[MemoryClient, list[str]]
) -> None:
    mem, ids = mover
    porto = next(f for f in _residences(mem) if "Porto" in (f.fact_value or ""))
    drilled = _drill(stack, [porto.node_id], [], "CURRENT", "2026-05-01")
    assert [u.episode_id for u in drilled] == [ids[4], ids[0]]
    assert all(u.unit_id.startswith(f"{u.episode_id}#") and u.fused > 0 for u in drilled)
    # Already ranked, the old value's episode gains more than the new one's, and still comes after it.
    other = UnitHit(f"{ids[6]}#0", ids[6], "s-6", "", "pasta", _ms("2026-04-12"), 0, 0.02, 0.3, 0.3)
    old = UnitHit(f"{ids[0]}#0", ids[0], "s-0", "", "eggs", _ms("2026-01-10"), 0, 0.01, 0.2, 0.2)
    moved = _drill(stack, [porto.node_id], [other, old], "CURRENT", "2026-05-01")
    assert [u.episode_id for u in moved] == [other.episode_id, ids[4], ids[0]]
    assert moved[1].fused > 1 / 62 and moved[2].fused == moved[1].fused


def test_the_old_fact_asked_about_the_past_brings_the_episode_that_ended_it(
    stack: Stack, mover: tuple[MemoryClient, list[str]]
) -> None:
    mem, ids = mover
    lisbon = next(f for f in _residences(mem) if "Lisbon" in (f.fact_value or ""))
    assert lisbon.superseded_by is not None
    assert [u.episode_id for u in _drill(stack, [lisbon.node_id], [], "POINT_IN_TIME", "2026-05-01")] == [
        ids[0], ids[4]]  # fmt: skip
    # Asked before the move: the episode after as_of never joins; a window's question drills no version.
    assert [u.episode_id for u in _drill(stack, [lisbon.node_id], [], "POINT_IN_TIME", "2026-03-01")] == [ids[0]]
    assert [u.episode_id for u in _drill(stack, [lisbon.node_id], [], "WINDOW", "2026-05-01")] == [ids[0]]


def test_a_search_about_the_present_finds_the_move_and_where_it_came_from(
    stack: Stack, mover: tuple[MemoryClient, list[str]]
) -> None:
    res = search_in_process(stack, CLAW, "rui", "Which city am I based in these days?", 3, "2026-05-01T00:00:00Z",
                            rules=SEED_RULES)  # fmt: skip
    sessions = [h.session_id for h in res.hits]
    assert sessions[0] in ("s-4", "s-5") and "s-0" in sessions  # Porto first; Lisbon, where it came from, too


def _first_stage(stack: Stack, pool_size: int, start: str | None, bound: str, as_of: str) -> list[tuple[str, float]]:
    """The first stage (``projections.kmms.rerank.first_stage``) for "Where do I live?" on a pool of ``pool_size``: one
    connection leaves none to spare, so every part runs one after the other on it."""
    from projections.kmms.rerank import first_stage

    cfg = with_rules()
    from projections.queries import tenant_tx

    question = "Where do I live?"

    async def run() -> list[tuple[str, float]]:
        async with app_pool(stack, max_size=pool_size) as pool, tenant_tx(pool, "mem-b") as conn:
            model, (floats,) = await unit_vectors(conn, CLAW, 1)
            units = await first_stage(conn, pool, Memory("mem-b", CLAW, "rui"), floats, model, "live",
                                      "hybrid", _ms(bound), None if start is None else _ms(start), _ms(as_of),
                                      30, cfg.voice.adjustments(question), True, cfg=cfg)  # fmt: skip
            return [(u.unit_id, round(u.fused, 9)) for u in units]

    return asyncio.run(run())


@pytest.mark.parametrize(("start", "bound"), [(None, "2026-05-01"), ("2026-03-01", "2026-04-01")])
def test_the_first_stage_side_by_side_ranks_as_one_after_the_other(
    stack: Stack, mover: tuple[MemoryClient, list[str]], start: str | None, bound: str
) -> None:
    _, ids = mover
    alone = _first_stage(stack, 1, start, bound, "2026-05-01")
    side_by_side = _first_stage(stack, 4, start, bound, "2026-05-01")
    assert alone and side_by_side == alone
    assert {u.split("#")[0] for u, _ in alone} <= set(ids)  # this memory's, nothing after as_of
    if start is not None:  # the window's one episode (the move to Porto, 2026-03-20) is always there
        assert any(u.startswith(f"{ids[4]}#") for u, _ in alone)


def test_work_on_the_side_is_done_in_line_when_no_connection_is_free(stack: Stack) -> None:
    from projections.queries import on_side, tenant_tx

    async def tenant_of(conn: Any) -> str:
        cur = await conn.execute("SELECT current_setting('hivemem.tenant', true)")
        return str((await cur.fetchone())[0])

    async def run() -> tuple[str | None, str | None]:
        async with app_pool(stack, max_size=1) as pool:
            async with tenant_tx(pool, "mem-b"):  # the pool's one connection, held: nothing to spare
                busy = await asyncio.wait_for(on_side(pool, "mem-a", tenant_of), timeout=2)
            free = await on_side(pool, "mem-a", tenant_of)
            return busy, free

    assert asyncio.run(run()) == (None, "mem-a")
