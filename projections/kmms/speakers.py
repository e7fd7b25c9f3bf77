"""The names of a memory's speakers (``governance.kmms.speakers``), read from its most recent rounds.

A turn's label is the name after its role (``user: Melanie: ...``, ``assistant: Caroline: ...``). The labels of
every turn of the memory's ``RECENT`` most recent rounds are read, through the memory's index, and kept per process
for ``TTL_S``: a search asks for them before it embeds its question, and a speaker joining a conversation is a name
for the next minute's questions. Every turn's, not only a round's first: a chat between two people sent as the
user's and the assistant's turns names the second speaker inside the rounds the first one opens.
"""

from __future__ import annotations

import time

from psycopg_pool import AsyncConnectionPool

from governance.kmms.speakers import speakers, without_speakers
from projections.kmms.search import Memory
from projections.queries import tenant_tx

RECENT = 2_000
TTL_S = 60.0
_KEPT_MAX = 10_000  # memories kept; a bound, not an LRU: the next search of one dropped reads it again
_kept: dict[tuple[str, str, str], tuple[float, frozenset[str]]] = {}

# Each turn's label: what ``governance.transcripts.turn_line`` writes after the role for a named turn.
_LABELS = (
    "SELECT m[1] FROM (SELECT u.text FROM kmms.kmms_units u WHERE u.tenant = %s AND u.claw_id = %s AND u.scope = %s "
    "ORDER BY u.occurred_at DESC LIMIT %s) r, regexp_matches(r.text, '(?:^|\n)(?:user|assistant): ([^:\n]{1,40}): ', "
    "'g') AS m"
)


async def speaker_names(pool: AsyncConnectionPool, m: Memory) -> frozenset[str]:
    """The speakers' names of memory ``m`` (empty for a memory without named turns), as read less than ``TTL_S``
    ago."""
    key = (m.tenant, m.claw_id, m.scope)
    kept = _kept.get(key)
    if kept is not None and time.monotonic() - kept[0] < TTL_S:
        return kept[1]
    async with tenant_tx(pool, m.tenant) as conn:
        cur = await conn.execute(_LABELS, (m.tenant, m.claw_id, m.scope, RECENT))
        names = speakers(str(r[0]) if r[0] is not None else None for r in await cur.fetchall())
    if len(_kept) >= _KEPT_MAX:
        _kept.clear()
    _kept[key] = (time.monotonic(), names)
    return names


async def embedded_question(pool: AsyncConnectionPool, m: Memory, text: str, keep_names: bool) -> str:
    """What the question's vector is computed from: ``text`` without the speakers' names of memory ``m``, or as it
    is with ``keep_names`` (``SearchConfig.speaker_names``)."""
    return text if keep_names else without_speakers(text, await speaker_names(pool, m))
