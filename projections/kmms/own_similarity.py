"""The similarities a search reports, read against the question's own vector.

A search may rank by a blend of the question's vector and its statement form's
(``governance.kmms.statement``). The blend ranks the evidence higher, but it is also closer to everything a
memory holds: its cosines are not the question's, and confidence (Table 3), the layers' sufficiency and
abstention are thresholds on the question's cosine. So once the hits are chosen, their similarities (and a
unit's similarity less its voice's adjustment, what abstention reads) are read again against the question's
own vector, in one statement.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from projections.kmms.nodes import NodeRow
from projections.kmms.search import Memory, UnitHit
from projections.kmms.sql import UNIT_SIMILARITIES, Conn, vector_literal

Hits = tuple[list[UnitHit], list[NodeRow]]


async def own_similarities(conn: Conn, m: Memory, model: str, own: list[float], voices: dict[str, float],
                           units: list[UnitHit], nodes: list[NodeRow]) -> Hits:  # fmt: skip
    """``units`` and ``nodes`` with their similarities to ``own`` (and the units' less their voices'
    ``voices`` adjustments). A hit without a vector keeps what it had."""
    if not units and not nodes:
        return units, nodes
    p: dict[str, Any] = {"t": m.tenant, "model": model, "q": vector_literal(own), "v_asked": voices.get("asked", 0.0),
                         "v_told": voices.get("told", 0.0), "v_reply": voices.get("reply", 0.0),
                         "units": [u.unit_id for u in units], "nodes": [n.node_id for n in nodes]}  # fmt: skip
    cur = await conn.execute(  # type: ignore[arg-type]
        f"SELECT u.unit_id, {UNIT_SIMILARITIES} FROM kmms.kmms_units u WHERE u.tenant = %(t)s "
        "AND u.unit_id = ANY(%(units)s) UNION ALL SELECT v.unit_id, ARRAY[1 - (v.embedding <=> %(q)s::vector)] "
        "FROM kmms.kmms_vectors v WHERE v.tenant = %(t)s AND v.model = %(model)s AND v.unit_id = ANY(%(nodes)s)",
        p,
    )
    sims: dict[str, Any] = {str(r[0]): r[1] for r in await cur.fetchall()}
    units = [_unit(u, sims.get(u.unit_id)) for u in units]
    nodes = [replace(n, similarity=float(sims[n.node_id][0])) if sims.get(n.node_id) else n for n in nodes]
    return units, nodes


def _unit(u: UnitHit, pair: Any) -> UnitHit:
    if not pair or pair[0] is None:
        return u
    return replace(u, similarity=float(pair[0]), voiced=float(pair[1]))
