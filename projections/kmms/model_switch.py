"""Which embedding model serves a memory's vector search while the model is being changed (seed 004's
switch rule): the old vectors serve until the new ones are complete, and one query never mixes the two.

During a switch the deployment runs two embedders (``HIVEMEM_EMBEDDINGS_*``, the new model, and
``HIVEMEM_EMBEDDINGS_PREVIOUS*``, the old one): the old one keeps embedding what arrives, the new one
re-embeds the whole memory from the log in the background. The API serves the **previous** model until

1. the new model's embedder has caught up with the old one's: its stored offsets on the log are at least
   the old one's on every partition (then it has embedded everything the old one has), and
2. in the memory asked about (tenant, claw, user scope), every unit and node the previous model has a
   vector for has one from the new model too (the read model has folded them);

from then on it serves the **new** model for that memory, for good (a switch is not undone when a later
episode briefly has its old vector before its new one: that is the ordinary lag of a read model). Every
query embeds its text with the serving model and reads that model's vectors only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from psycopg_pool import AsyncConnectionPool

from contracts.consumers import kmms_embedder_name
from projections.kmms.search import Memory
from projections.queries import tenant_tx

MemoryKey = tuple[str, str, str]  # tenant, claw, scope
MAX_SWITCHED = 100_000  # memories remembered as switched; past that the cache starts again (a re-check is cheap)

# A partition where the old embedder is further than the new one: none left means the new one caught up.
_CAUGHT_UP = (
    "SELECT NOT EXISTS (SELECT 1 FROM hivemem.projection_offsets o WHERE o.consumer = %(old)s AND o.next_offset > "
    "coalesce((SELECT n.next_offset FROM hivemem.projection_offsets n WHERE n.consumer = %(new)s "
    "AND n.topic = o.topic AND n.partition = o.partition), 0))"
)
# Old vectors of the memory that have no new vector: none left means the new model covers it.
_COVERED = (
    "SELECT NOT EXISTS (SELECT 1 FROM kmms.kmms_vectors o WHERE o.tenant = %(t)s AND o.claw_id = %(c)s "
    "AND o.scope = %(s)s AND o.model = %(old)s AND NOT EXISTS (SELECT 1 FROM kmms.kmms_vectors n "
    "WHERE n.tenant = o.tenant AND n.unit_id = o.unit_id AND n.model = %(new)s))"
)


async def caught_up(pool: AsyncConnectionPool, tenant: str, old: str, new: str) -> bool:
    """Whether the new model's embedder has read the log as far as the old model's (rule 1)."""
    async with tenant_tx(pool, tenant) as conn:
        cur = await conn.execute(_CAUGHT_UP, {"old": kmms_embedder_name(old), "new": kmms_embedder_name(new)})
        row = await cur.fetchone()
    return bool(row and row[0])


async def covered(pool: AsyncConnectionPool, m: Memory, old: str, new: str) -> bool:
    """Whether the new model has a vector for everything the old one has, in memory ``m`` (rule 2)."""
    async with tenant_tx(pool, m.tenant) as conn:
        cur = await conn.execute(_COVERED, {"t": m.tenant, "c": m.claw_id, "s": m.scope, "old": old, "new": new})
        row = await cur.fetchone()
    return bool(row and row[0])


Check = Callable[[Memory], Awaitable[bool]]


class ServingModel:
    """The model that serves each memory: ``previous`` until ``caught_up`` (once, globally) and then
    ``covered(memory)`` say the ``current`` one is complete there, then ``current`` for good. Without a
    previous model, always ``current``."""

    def __init__(self, current: Any, previous: Any | None, caught_up: Check, covered: Check) -> None:
        self.current, self.previous = current, previous
        self._caught_up, self._covered = caught_up, covered
        self._all_caught_up = False
        self._switched: set[MemoryKey] = set()

    async def embedder(self, m: Memory) -> Any:
        """The embedder (with its ``model_id``) whose vectors serve ``m`` now."""
        if self.previous is None or self.current is None:
            return self.current
        key = (m.tenant, m.claw_id, m.scope)
        if key in self._switched:
            return self.current
        if not self._all_caught_up:
            self._all_caught_up = await self._caught_up(m)
            if not self._all_caught_up:
                return self.previous
        if not await self._covered(m):
            return self.previous
        if len(self._switched) >= MAX_SWITCHED:
            self._switched.clear()
        self._switched.add(key)
        return self.current
