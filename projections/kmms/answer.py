"""What ``ask`` answers with (the rules: ``governance.kmms.answer``): an L4 round after its day, with the units just
before and after it in its episode that read with it (the turns around a turn, the pieces of a round cut into
pieces), then the runner-up of another session read the same way; the units around both read here in one statement
by their keys.
"""

from __future__ import annotations

from typing import NamedTuple

from psycopg_pool import AsyncConnectionPool

from contracts.kmms_views import MemoryHit, SearchResult, Time
from governance.kmms.answer import evidence_answer, plain_answer, runner_up, with_runner_up
from governance.kmms.late import neighbours
from projections.kmms.search import Memory
from projections.queries import tenant_tx


class Around(NamedTuple):
    before: str | None  # the text of the unit just before, None where there is none
    after: str | None
    conversation: bool  # whether the episode is a conversation (it has turns)


ALONE = Around(None, None, False)


async def around(pool: AsyncConnectionPool, m: Memory, round_ids: list[str]) -> list[Around]:
    """For each of ``round_ids``, the units just before and after it in its episode, in memory ``m`` (the same
    episode, so the same time, thread and user as the round itself), and whether that episode is a conversation."""
    pairs = [neighbours(r) for r in round_ids]
    ids = [i for pair in pairs if pair is not None for i in pair]
    if not ids:
        return [ALONE for _ in round_ids]
    async with tenant_tx(pool, m.tenant) as conn:
        cur = await conn.execute(
            "SELECT u.unit_id, u.text, e.turn_layout <> '[]'::jsonb FROM kmms.kmms_units u JOIN kmms.kmms_episodes e "
            "ON e.tenant = u.tenant AND e.episode_id = u.episode_id WHERE u.tenant = %s AND u.claw_id = %s "
            "AND u.scope = %s AND u.unit_id = ANY(%s)",
            (m.tenant, m.claw_id, m.scope, ids),
        )
        rows = await cur.fetchall()
    found = {str(r[0]): (str(r[1]), bool(r[2])) for r in rows}
    out = []
    for pair in pairs:
        if pair is None:
            out.append(ALONE)
            continue
        before, after = found.get(pair[0]), found.get(pair[1])
        out.append(Around(before and before[0], after and after[0], any(x[1] for x in (before, after) if x)))
    return out


def runner_up_hit(res: SearchResult[Time], answer: MemoryHit[Time], about: float) -> MemoryHit[Time] | None:
    """The evidence hit ``ask`` adds to an evidence ``answer`` (``governance.kmms.answer.runner_up``: the first of
    another session at least ``about`` similar to the question); None for an answer of another layer. Of the API's
    result (times in ms) or the SDK's (datetimes)."""
    if answer.layer != 4:
        return None
    i = runner_up([(h.session_id, h.similarity) for h in res.hits], answer.session_id, about)
    return None if i is None else res.hits[i]


async def answer_text(pool: AsyncConnectionPool, m: Memory, hit: MemoryHit[int],
                      other: MemoryHit[int] | None = None) -> str:  # fmt: skip
    """``ask``'s answer from its answering ``hit`` (hedging prefix not included): an L2 fact's value; an L4 round
    after its day, with the units around it that read with it (``evidence_answer``), then ``other`` (its runner-up,
    ``runner_up_hit``) read the same way; else the hit's text without role prefixes."""
    if hit.layer != 4:
        return plain_answer(hit.layer, hit.fact_value, hit.text)
    shown = [h for h in (hit, other) if h is not None]
    ids = [h._round_id for h in shown if h._round_id is not None]
    near = dict(zip(ids, await around(pool, m, ids), strict=True))
    texts = []
    for h in shown:
        a = near.get(h._round_id or "", ALONE)
        texts.append(evidence_answer(a.before, h.text, a.after, h.occurred_at, a.conversation))
    return with_runner_up(texts[0], texts[1] if len(texts) > 1 else None)
