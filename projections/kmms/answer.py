"""What ``ask`` answers with (the rules: ``governance.kmms.answer``): an L4 round after its day, with the units just
before and after it in its episode that read with it (the turns around a turn, the pieces of a round cut into
pieces), read here in one statement by the two units' keys.
"""

from __future__ import annotations

from typing import NamedTuple

from psycopg_pool import AsyncConnectionPool

from contracts.kmms_views import MemoryHit
from governance.kmms.answer import evidence_answer, plain_answer
from governance.kmms.late import neighbours
from projections.kmms.search import Memory
from projections.queries import tenant_tx


class Around(NamedTuple):
    before: str | None  # the text of the unit just before, None where there is none
    after: str | None
    conversation: bool  # whether the episode is a conversation (it has turns)


async def around(pool: AsyncConnectionPool, m: Memory, round_id: str) -> Around:
    """The units just before and after ``round_id`` in its episode, in memory ``m`` (the same episode, so the same
    time, thread and user as the round itself), and whether that episode is a conversation."""
    ids = neighbours(round_id)
    if ids is None:
        return Around(None, None, False)
    async with tenant_tx(pool, m.tenant) as conn:
        cur = await conn.execute(
            "SELECT u.unit_id, u.text, e.turn_layout <> '[]'::jsonb FROM kmms.kmms_units u JOIN kmms.kmms_episodes e "
            "ON e.tenant = u.tenant AND e.episode_id = u.episode_id WHERE u.tenant = %s AND u.claw_id = %s "
            "AND u.scope = %s AND u.unit_id = ANY(%s)",
            (m.tenant, m.claw_id, m.scope, list(ids)),
        )
        rows = await cur.fetchall()
    found = {str(r[0]): str(r[1]) for r in rows}
    return Around(found.get(ids[0]), found.get(ids[1]), any(bool(r[2]) for r in rows))


async def answer_text(pool: AsyncConnectionPool, m: Memory, hit: MemoryHit[int]) -> str:
    """``ask``'s answer from its answering ``hit`` (hedging prefix not included): an L2 fact's value; an L4 round
    after its day, with the units around it that read with it (``evidence_answer``); else the hit's text without
    role prefixes."""
    if hit.layer != 4:
        return plain_answer(hit.layer, hit.fact_value, hit.text)
    near = Around(None, None, False) if hit._round_id is None else await around(pool, m, hit._round_id)
    return evidence_answer(near.before, hit.text, near.after, hit.occurred_at, near.conversation)
