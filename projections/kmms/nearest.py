"""The first stage's vector rankings over one memory's read model: its nearest units by the model's HNSW index, and
a time window's by exact distance, its vectors read by their units' time (migration 34). Each row is a vector's
(unit, distance) with its unit looked up after the ranking (``vectors_then_units``); the caller
(``projections.kmms.search.unit_candidates``) fuses them with full text."""

from __future__ import annotations

from typing import Any, cast

from psycopg_pool import AsyncConnectionPool

from governance.kmms.search_config import DEFAULT
from projections.kmms.sql import UNIT_OF_SQL, Conn
from projections.queries import side_by_side

EXACT_WINDOW = 20_000  # a time window holding at most this many units is ranked by exact distance
# ... and one of at least ``SearchConfig.split_window``, in two halves side by side when the pool has a connection
# to spare.
NEAREST_FIRST, NEAREST_MAX = 1_000, 256_000  # a large memory's nearest vectors read before the time filter
# The API's pool prepares a statement run five times (``projections.queries.PREPARE_THRESHOLD``), and Postgres may then
# keep one generic plan for all its parameters. The nearest vectors' statement and a window's must be planned for
# theirs: a generic plan cannot use the model's HNSW index (partial, ``WHERE model = '<model>'``), and a window's
# best plan depends on its width. At 100,000 episodes the generic nearest-vectors plan sorted the whole memory's
# 400,000 vectors: 1,000 ms a search instead of 20. Set for the transaction, before either runs.
CUSTOM_PLAN = "set_config('plan_cache_mode', 'force_custom_plan', true)"
# A unit ``u`` of the memory within [start, bound] of event time, in the thread if one is asked for.
IN_SPAN = ("u.tenant = %(t)s AND u.claw_id = %(c)s AND u.scope = %(s)s AND u.occurred_at <= %(bound)s "
           "AND u.occurred_at >= %(start)s AND (%(th)s::text IS NULL OR u.thread_id = %(th)s)")  # fmt: skip


async def distances(conn: Conn, sql: str, params: dict[str, Any]) -> list[tuple[str, float]]:
    cur = await conn.execute(sql, params)  # type: ignore[arg-type]
    return [(str(r[0]), float(r[1])) for r in cast(list[Any], await cur.fetchall())]


def vectors_then_units(where: str) -> tuple[str, str]:
    """(near, then): the memory's unit and sentence vectors with their distances to the query (``near``; a caller
    adds an ORDER BY and LIMIT, or a time range on ``v.occurred_at``), and the statement that ranks them and looks
    each one's unit up in that order until ``%(want)s`` pass ``where`` (``then``, over a CTE named ``near``).

    The memory's vectors are read by themselves first, and only then joined to their units (time, thread): in
    one joined statement under the application role's row-level security, the planner scanned every vector of the
    tenant (1.6 s at 500,000 vectors; 50 ms by HNSW for the owner). The parent unit's id is computed before the
    join: a join on a function of the row (regexp_replace is not leakproof) cannot use the units' primary key
    under row-level security, and became a scan of them all. Ranked first, then each row's unit looked up in that
    order: joining them all first probed the units' key for every one of the 1,000 nearest (3.7 of 14 ms at
    100,000 episodes; now ~200 us)."""
    mine = ("v.model = %(model)s AND v.kind IN ('unit', 'sentence') AND v.tenant = %(t)s AND v.claw_id = %(c)s "
            "AND v.scope = %(s)s")  # fmt: skip
    near = (f"SELECT v.unit_id, {UNIT_OF_SQL.format(v='v')} AS parent, "
            "v.embedding <=> %(q)s::vector AS d FROM kmms.kmms_vectors v WHERE " + mine)  # fmt: skip
    then = ("SELECT r.parent, r.d FROM (SELECT near.unit_id, near.parent, near.d FROM near ORDER BY near.d, "
            "near.unit_id) r WHERE EXISTS (SELECT 1 FROM kmms.kmms_units u WHERE "
            f"u.tenant = %(t)s AND u.unit_id = r.parent AND {where}) "
            "ORDER BY r.d, r.unit_id LIMIT %(want)s")  # fmt: skip
    return near, then


async def nearest(conn: Conn, where: str, p: dict[str, Any], want: int, units: int, small: bool,
                  window: int | None = None) -> list[tuple[str, float]]:  # fmt: skip
    """Units by distance to the query, one (unit, distance) row per vector (a unit's own, kind
    'unit', and its sentences', kind 'sentence', id ``<unit>~s<n>``: a unit ranks by its best, its first row),
    ``want`` rows, within ``where`` (``vectors_then_units``). A ``small`` memory's vectors are all read (by the
    scope index: exact); a large one's (``units`` of them) nearest ``k`` by HNSW, ``k`` growing while too few of
    them pass the time filter. With a time window of ``window`` units, ``k`` starts where the window's
    share of the memory says enough will pass, instead of growing to it one scan at a time."""
    near, then = vectors_then_units(where)
    if small:
        return await distances(conn, f"WITH near AS MATERIALIZED ({near}) {then}", {**p, "want": want})
    k = NEAREST_FIRST
    if window:  # twice the rows the window's share of the memory should yield
        k = min(NEAREST_MAX, max(k, 2 * want * units // window))
    while True:
        await conn.execute(f"SELECT set_config('hnsw.max_scan_tuples', '{max(20_000, 2 * k)}', true), {CUSTOM_PLAN}")
        rows = await distances(conn, f"WITH near AS MATERIALIZED ({near} ORDER BY d LIMIT %(k)s) {then}",
                                {**p, "want": want, "k": k})  # fmt: skip
        if len(rows) >= want or k >= 2 * units or k >= NEAREST_MAX:
            return rows
        k *= 4


def window_statement(where: str, span: str = "") -> str:
    """A time window's vectors nearest the query, one row per vector, ``%(want)s`` rows (``exact``)."""
    near, then = vectors_then_units(where)
    # MATERIALIZED, and no ORDER BY inside: otherwise the planner walks the HNSW index for the nearest vectors
    # of the whole memory and filters them by time (3 of 60 found).
    return (f"WITH near AS MATERIALIZED ({near} AND v.occurred_at >= %(start)s AND v.occurred_at <= %(bound)s"
            f"{span}) {then}")  # fmt: skip


async def exact(conn: Conn, where: str, p: dict[str, Any], span: str = "") -> list[tuple[str, float]]:
    """The window's ``n`` units nearest the query, each by its best vector (its own or a sentence's). The window's
    vectors are read by their unit's time (``kmms_vectors_time``, migration 34: one range scan, ~2.5 us a
    vector), and ``where`` checks only the nearest, in order; ``span``: a further condition on ``v.occurred_at``.
    Reading the window's units and probing each one's vectors by id cost twice to four times as much."""
    sql = window_statement(where, span)
    await conn.execute(f"SELECT {CUSTOM_PLAN}")
    n, want = int(p["n"]), 3 * int(p["n"])
    while True:
        rows = await distances(conn, sql, {**p, "want": want})
        best: dict[str, float] = {}
        for u, d in rows:  # a unit's best vector comes first
            best.setdefault(u, d)
        if len(best) >= n or len(rows) < want:
            return list(best.items())[:n]
        want *= 4


def spare(pool: AsyncConnectionPool) -> bool:
    """Whether the pool can lend a connection without making a request wait."""
    s = pool.get_stats()
    idle, size = s.get("pool_available", 0), s.get("pool_size", 0)
    return s.get("requests_waiting", 0) == 0 and (idle > 0 or size < (pool.max_size or 0))


async def window_ranking(conn: Conn, pool: AsyncConnectionPool | None, tenant: str, where: str, p: dict[str, Any],
                          window: int, split: int = DEFAULT.split_window) -> list[tuple[str, float]]:  # fmt: skip
    """A time window's units by exact distance (``exact``). Each of the window's vectors costs a read and a
    distance (about 2.5-3 us since migration 34; 44 ms for the ~14,000 rounds of a week at 100,000 episodes), and
    Postgres will not plan this in parallel. So a window of ``split`` units or more, when the pool has a
    connection to spare, is ranked as two halves of time side by side, one core each, and the halves' best are
    merged: the same units in the same order (ties on distance by unit id; with the halves, p95 at 100,000
    episodes 38-39 ms against 42-44 without)."""
    if pool is None or window < split or not spare(pool):
        return await exact(conn, where, p)
    cur = await conn.execute(  # type: ignore[arg-type]
        f"SELECT u.occurred_at FROM kmms.kmms_units u WHERE {where} ORDER BY u.occurred_at OFFSET %(half)s LIMIT 1",
        {**p, "half": window // 2})  # fmt: skip
    row = await cur.fetchone()
    if row is None:
        return await exact(conn, where, p)
    halves = {**p, "mid": int(str(row[0]))}

    early, late = " AND v.occurred_at <= %(mid)s", " AND v.occurred_at > %(mid)s"
    first, second = await side_by_side(conn, pool, tenant, exact(conn, where, halves, early),
                                       lambda c: exact(c, where, halves, late))  # fmt: skip
    return sorted(first + second, key=lambda r: (r[1], r[0]))[: int(p["n"])]


async def window_count(conn: Conn, where: str, p: dict[str, Any]) -> int:
    """The units of the memory within the window. Never prepared: its best plan depends on how wide the window is,
    and a plan kept for all windows counted a year of a memory of 100,000 episodes in 300 ms instead of 20 (the
    API's pool prepares a statement run five times, ``projections.queries.PREPARE_THRESHOLD``)."""
    cur = await conn.execute(f"SELECT count(*) FROM kmms.kmms_units u WHERE {where}", p,  # type: ignore[arg-type]
                             prepare=False)  # fmt: skip
    row = await cur.fetchone()
    return int(str(row[0])) if row else 0
