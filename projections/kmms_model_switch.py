"""Which embedding model serves a memory's vector search while the model is being changed (seed 004's
switch rule): the old vectors serve until the new ones are complete, and one query never mixes the two.

During a switch the deployment runs two embedders (``HIVEMEM_EMBEDDINGS_*``, the new model, and
``HIVEMEM_EMBEDDINGS_PREVIOUS*``, the old one): the old one keeps embedding what arrives, the new one
re-embeds the whole memory from the log in the background. For each memory (tenant, claw, user scope) the
API serves the **previous** model until every unit and node the previous model has a vector for has one
from the new model too; from then on it serves the **new** model, for good (a switch is not undone when a
later episode briefly has its old vector before its new one: that is the ordinary lag of a read model).
Every query embeds its text with the serving model and reads that model's vectors only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from psycopg_pool import AsyncConnectionPool

from projections.kmms_search import Memory
from projections.queries import tenant_tx

MemoryKey = tuple[str, str, str]  # tenant, claw, scope
MAX_SWITCHED = 100_000  # memories remembered as switched; past that the cache starts again (a re-check is cheap)

# Old vectors of the memory that have no new vector: none left means the new model is complete there.
_COMPLETE = (
    "SELECT NOT EXISTS (SELECT 1 FROM kmms.kmms_vectors o WHERE o.tenant = %(t)s AND o.claw_id = %(c)s "
    "AND o.scope = %(s)s AND o.model = %(old)s AND NOT EXISTS (SELECT 1 FROM kmms.kmms_vectors n "
    "WHERE n.unit_id = o.unit_id AND n.model = %(new)s))"
)


async def new_model_complete(pool: AsyncConnectionPool, m: Memory, old: str, new: str) -> bool:
    """Whether the new model has a vector for everything the old one has, in memory ``m``."""
    async with tenant_tx(pool, m.tenant) as conn:
        cur = await conn.execute(_COMPLETE, {"t": m.tenant, "c": m.claw_id, "s": m.scope, "old": old, "new": new})
        row = await cur.fetchone()
    return bool(row and row[0])


class ServingModel:
    """The model that serves each memory: ``previous`` until ``complete(memory)`` says the ``current`` one
    covers it, then ``current`` for good. Without a previous model, always ``current``."""

    def __init__(self, current: Any, previous: Any | None,
                 complete: Callable[[Memory], Awaitable[bool]]) -> None:  # fmt: skip
        self.current, self.previous = current, previous
        self._complete = complete
        self._switched: set[MemoryKey] = set()

    async def embedder(self, m: Memory) -> Any:
        """The embedder (with its ``model_id``) whose vectors serve ``m`` now."""
        if self.previous is None or self.current is None:
            return self.current
        key = (m.tenant, m.claw_id, m.scope)
        if key in self._switched:
            return self.current
        if not await self._complete(m):
            return self.previous
        if len(self._switched) >= MAX_SWITCHED:
            self._switched.clear()
        self._switched.add(key)
        return self.current
