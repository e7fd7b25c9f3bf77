"""What ``ask`` answers with (the rules: ``governance.kmms.answer``): an L4 round after its day, and when it is one
turn of a conversation sent turn by turn, with the turns just before and after it in its episode, read here in one
statement by the two rounds' keys.
"""

from __future__ import annotations

from psycopg_pool import AsyncConnectionPool

from contracts.kmms_views import MemoryHit
from governance.kmms.answer import evidence_answer
from governance.kmms.late import neighbours
from governance.kmms.phrasing import one_turn, strip_roles
from projections.kmms.search import Memory
from projections.queries import tenant_tx


async def around(pool: AsyncConnectionPool, m: Memory, round_id: str) -> tuple[str | None, str | None]:
    """The text of the rounds just before and after ``round_id`` in its episode (None where there is none), in
    memory ``m``: the same episode, so the same time, thread and user as the round itself."""
    ids = neighbours(round_id)
    if ids is None:
        return None, None
    async with tenant_tx(pool, m.tenant) as conn:
        cur = await conn.execute(
            "SELECT unit_id, text FROM kmms.kmms_units WHERE tenant = %s AND claw_id = %s AND scope = %s "
            "AND unit_id = ANY(%s)",
            (m.tenant, m.claw_id, m.scope, list(ids)),
        )
        found = {str(r[0]): str(r[1]) for r in await cur.fetchall()}
    return found.get(ids[0]), found.get(ids[1])


async def answer_text(pool: AsyncConnectionPool, m: Memory, hit: MemoryHit[int]) -> str:
    """``ask``'s answer from its answering ``hit`` (hedging prefix not included): an L2 fact's value; an L4 round
    after its day, with the turns around it when it is one turn (``evidence_answer``); else the hit's text without
    role prefixes."""
    if hit.layer == 2 and hit.fact_value:
        return hit.fact_value
    if hit.layer != 4:
        return strip_roles(hit.text)
    before: str | None = None
    after: str | None = None
    if hit._round_id is not None and one_turn(hit.text):  # a turn: the turns around it are part of the answer
        before, after = await around(pool, m, hit._round_id)
    return evidence_answer(before, hit.text, after, hit.occurred_at)
