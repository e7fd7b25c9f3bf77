"""What a search derived, beside its evidence: the L1–L3 nodes of a result's ``context``, each with the sessions
it cites.

A search's ``hits`` are evidence (L4 episodes, what an agent can quote); the facts, summaries and abstractions that
consolidation read from them explain and answer, but never take an evidence hit's place (docs/kmms.md, "Evidence
first"). A node names its sources (``source_ids``): an L3 summary its episodes, an L2 fact its summaries, an L1
abstraction its facts. ``cited_sessions`` follows those links down to the episodes and returns, per node, the
sessions it was read from, in the order first met: its provenance in the caller's terms.
"""

from __future__ import annotations

from typing import Any

from projections.kmms.search import Memory

# The sessions each of the nodes ``%(ids)s`` cites, as the common table expressions ``down`` (the node's sources, their
# sources, ... to depth 4) and ``cited(root, sessions, in_lane)`` (the episodes' sessions, in the order their first
# episode occurred, then by id; and whether every one of those episodes is in the search's thread, ``%(th)s``, true
# for a search of every thread, NULL th), under ``WITH RECURSIVE``; parameters t, c, s (the memory), th and ids. The
# nodes' rows read them in the same statement (``projections.kmms.nodes``). Each step looks its sources up by the
# nodes' key, one row at a time (the subquery's LIMIT keeps the planner from joining it): the planner cannot tell how
# few rows a step holds, and hashed every node of the tenant instead (3.4 of 3.8 ms with 3,340 nodes; it grows with
# the tenant).
CITED = ("down(root, id, depth) AS (SELECT n.node_id, s.id, 1 FROM kmms.kmms_nodes n, unnest(n.source_ids) s(id) "
         "WHERE n.tenant = %(t)s AND n.node_id = ANY(%(ids)s) "
         "UNION SELECT d.root, s.id, d.depth + 1 FROM down d CROSS JOIN LATERAL (SELECT n.source_ids FROM "
         "kmms.kmms_nodes n WHERE n.tenant = %(t)s AND n.node_id = d.id LIMIT 1) n "
         "CROSS JOIN LATERAL unnest(n.source_ids) s(id) WHERE d.depth < 4), "
         "cited(root, sessions, in_lane) AS (SELECT x.root, array_agg(x.session_id ORDER BY x.first, x.session_id), "
         "bool_and(x.in_lane) FROM (SELECT d.root, e.session_id, min(e.occurred_at) AS first, "
         "bool_and(%(th)s::text IS NULL OR e.thread_id = %(th)s) AS in_lane FROM down d JOIN kmms.kmms_episodes e "
         "ON e.tenant = %(t)s AND e.episode_id = d.id AND e.claw_id = %(c)s AND e.scope = %(s)s "
         "GROUP BY d.root, e.session_id) x GROUP BY x.root)")  # fmt: skip
# A search of one thread (a lane of the memory) shows a derived node only when every episode it was read from is in
# that thread: consolidation reads a memory's threads together, and a summary or fact of another lane's episodes is
# that lane's. ``cited.in_lane`` says which; a node that cites no episode is in no thread.
IN_LANE = "(%(th)s::text IS NULL OR ci.in_lane)"


async def cited_sessions(conn: Any, m: Memory, node_ids: list[str]) -> dict[str, list[str]]:
    """node id -> the sessions of the episodes it was derived from (through L1 -> L2 -> L3 -> L4), one statement; in a
    search of one thread (``m.thread_id``), only the nodes all of whose episodes are in it (``IN_LANE``)."""
    if not node_ids:
        return {}
    p = {"t": m.tenant, "c": m.claw_id, "s": m.scope, "th": m.thread_id, "ids": node_ids}
    cur = await conn.execute(f"WITH RECURSIVE {CITED} SELECT ci.root, ci.sessions FROM cited ci WHERE {IN_LANE}", p)
    return {str(root): [str(x) for x in sessions] for root, sessions in await cur.fetchall()}
