"""What the planner makes of a search's statements when a tenant holds many memories (migration 32 and
``projections.kmms.context.CITED``), on the real read model, in transactions rolled back (nothing the other
tests compare is left behind).

Without migration 32's statistics the planner took a memory's scope and its claw for independent and expected a
memory to hold a share of a share of the tenant's rows: 4 of a LoCoMo memory's 419 vectors among 90 memories,
which made the search join them to its units by a nested loop over both (17.7 ms instead of 1.6). Without the
lookup by key in the cited-sessions walk, it hashed every node of the tenant to walk a few nodes' sources."""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import pytest

from hivemem.stack import Stack
from projections.kmms.context import CITED
from projections.read_models import APP_ROLE

pytestmark = pytest.mark.integration

MEMORIES = 60  # in one tenant, each its own claw and scope, as each user of each claw
PER_MEMORY = 40


def _plan(conn: psycopg.Connection[Any], sql: str, params: dict[str, Any] | list[Any] | None = None) -> dict[str, Any]:
    row = conn.execute(f"EXPLAIN (FORMAT JSON) {sql}", params).fetchone()  # type: ignore[arg-type]
    assert row is not None
    plan = row[0] if isinstance(row[0], list) else json.loads(row[0])
    return dict(plan[0]["Plan"])


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [plan, *(n for child in plan.get("Plans", []) for n in _nodes(child))]


def _fill(conn: psycopg.Connection[Any], tenant: str) -> None:
    """MEMORIES memories of PER_MEMORY episodes, units, vectors and nodes each (a node cites an episode, and
    every other node the node before it), then ANALYZE (rolled back with the rows, but the tables' sizes stay)."""
    vec = "[" + ",".join(["0.05"] * 384) + "]"
    for m in range(MEMORIES):
        claw, scope = f"claw-{m}", f"user-{m}"
        rows = [(tenant, claw, scope, f"ep-{m}-{i}", f"s-{m}-{i}") for i in range(PER_MEMORY)]
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO kmms.kmms_episodes (tenant, claw_id, scope, episode_id, session_id, thread_id, "
                "content_type, occurred_at, content, content_hash, redacted, event_id, logged_at) VALUES "
                "(%s, %s, %s, %s, %s, '', 'messages', 1000, 'x', 'h', '{}', 'e', 1000)", rows)  # fmt: skip
            cur.executemany(
                "INSERT INTO kmms.kmms_units (tenant, claw_id, scope, unit_id, episode_id, session_id, thread_id, "
                "ordinal, text, occurred_at, logged_at) VALUES (%s, %s, %s, %s || '#0', %s, %s, '', 0, 'a walk', "
                "1000, 1000)", [(t, c, s, e, e, ss) for t, c, s, e, ss in rows])  # fmt: skip
            cur.executemany(
                "INSERT INTO kmms.kmms_vectors (unit_id, model, tenant, claw_id, scope, kind, embedding) VALUES "
                "(%s || '#0', 'plan-test', %s, %s, %s, 'unit', %s::vector)",
                [(e, t, c, s, vec) for t, c, s, e, _ in rows])  # fmt: skip
            cur.executemany(
                "INSERT INTO kmms.kmms_nodes (tenant, claw_id, scope, node_id, layer, entity, topic, content, version, "
                "valid_from, event_time, confidence, source_ids, model, logged_at) VALUES (%s, %s, %s, %s, 3, 'e', "
                "'t', 'a summary', 1, 1000, 1000, 0.9, %s, 'local', 1000)",
                [(t, c, s, f"n-{e}", [e] if i % 2 == 0 else [f"n-ep-{m}-{i - 1}"])
                 for i, (t, c, s, e, _) in enumerate(rows)])  # fmt: skip
    for table in ("kmms_episodes", "kmms_units", "kmms_vectors", "kmms_nodes"):
        conn.execute(f"ANALYZE kmms.{table}")


@pytest.fixture
def filled(stack: Stack) -> Any:
    tenant = f"plans-{uuid.uuid4().hex[:6]}"
    with psycopg.connect(stack.settings.require_database()) as conn, conn.transaction(force_rollback=True):
        _fill(conn, tenant)
        yield conn, tenant


@pytest.mark.parametrize("table", ["kmms_episodes", "kmms_units", "kmms_vectors", "kmms_nodes"])
def test_the_planner_expects_a_memory_to_hold_its_own_rows(filled: Any, table: str) -> None:
    conn, tenant = filled
    plan = _plan(conn, f"SELECT 1 FROM kmms.{table} WHERE tenant = %(t)s AND claw_id = 'claw-7' AND scope = 'user-7'",
                 {"t": tenant})  # fmt: skip
    # Independent columns would give PER_MEMORY / MEMORIES (under 1 row); the memory holds PER_MEMORY.
    assert plan["Plan Rows"] >= PER_MEMORY / 4, plan


def test_the_cited_sessions_walk_looks_nodes_up_by_key(filled: Any) -> None:
    conn, tenant = filled
    ids = [f"n-ep-7-{i}" for i in range(1, PER_MEMORY, 2)]  # nodes citing a node citing an episode
    p = {"t": tenant, "c": "claw-7", "s": "user-7", "th": None, "ids": ids}
    cited = dict(conn.execute(f"WITH RECURSIVE {CITED} SELECT root, sessions FROM cited", p).fetchall())
    assert cited == {f"n-ep-7-{i}": [f"s-7-{i - 1}"] for i in range(1, PER_MEMORY, 2)}
    scans = [n for n in _nodes(_plan(conn, f"WITH RECURSIVE {CITED} SELECT root, sessions FROM cited", p))
             if n.get("Relation Name") == "kmms_nodes"]  # fmt: skip
    assert scans and all(n["Node Type"] != "Seq Scan" for n in scans), scans


def test_a_time_windows_vectors_are_read_by_their_time(stack: Stack) -> None:
    """A memory of 6,000 vectors over 300 days (migration 34): a search's two-day window, asked under the API's
    role, reads its vectors by the ``kmms_vectors_time`` range, not all the memory's (by the scope index or a scan)
    nor the nearest of the whole memory by HNSW; and finds the window's nearest units, in order."""
    from projections.kmms.events import TIME_UNTIMED
    from projections.kmms.nearest import IN_SPAN, window_statement

    tenant, day = f"plans-{uuid.uuid4().hex[:6]}", 86_400_000
    with psycopg.connect(stack.settings.require_database()) as conn, conn.transaction(force_rollback=True):
        # Unit i on day i % 300, its vector at an angle growing with i: unit 0 is the query's nearest.
        conn.execute(
            "INSERT INTO kmms.kmms_units (tenant, claw_id, scope, unit_id, episode_id, session_id, thread_id, ordinal, "
            "text, occurred_at, logged_at) SELECT %(t)s, 'claw-w', 'user-w', 'ep-' || i || '#0', 'ep-' || i, "
            "'s-' || i, '', 0, 'a walk', (i %% 300) * %(day)s::bigint, 0 FROM generate_series(0, 5999) i",
            {"t": tenant, "day": day})  # fmt: skip
        conn.execute(
            "INSERT INTO kmms.kmms_vectors (unit_id, model, tenant, claw_id, scope, kind, embedding, occurred_at) "
            "SELECT 'ep-' || i || '#0', 'plan-test', %(t)s, 'claw-w', 'user-w', 'unit', "
            "('[' || cos(i / 6000.0) || ',' || sin(i / 6000.0) || repeat(',0', 382) || ']')::vector, "
            "(i %% 300) * %(day)s::bigint FROM generate_series(0, 5999) i", {"t": tenant, "day": day})  # fmt: skip
        for table in ("kmms_units", "kmms_vectors"):
            conn.execute(f"ANALYZE kmms.{table}")
        p = {"t": tenant, "c": "claw-w", "s": "user-w", "model": "plan-test", "th": None, "start": 10 * day,
             "bound": 11 * day, "q": "[1" + ",0" * 383 + "]",
             "want": 5}  # fmt: skip
        sql = window_statement(IN_SPAN)
        # As the API asks: its role, under row-level security, the tenant set for the transaction.
        conn.execute(f"SET LOCAL ROLE {APP_ROLE}")
        conn.execute("SELECT set_config('hivemem.tenant', %s, true)", (tenant,))
        scans = [n for n in _nodes(_plan(conn, sql, p)) if n.get("Relation Name") == "kmms_vectors"]
        assert [n.get("Index Name") for n in scans] == ["kmms_vectors_time"], scans
        rows = conn.execute(sql, p).fetchall()  # type: ignore[arg-type]
        # Days 10 and 11 hold units 10, 11, 310, 311, 610, ...: the five nearest are the first five of those.
        assert [r[0] for r in rows] == ["ep-10#0", "ep-11#0", "ep-310#0", "ep-311#0", "ep-610#0"], rows
        # The projector, folding rounds, looks for their vectors that came first among the untimed only (the
        # small partial index), not among the memory's vectors.
        conn.execute("RESET ROLE")
        update = _plan(conn, TIME_UNTIMED.format(s="kmms"), [[tenant], ["ep-1#0"], [1], [tenant], ["ep-1#0"]])
        scans = [n for n in _nodes(update) if n.get("Relation Name") == "kmms_vectors" and n is not update]
        assert [n.get("Index Name") for n in scans] == ["kmms_vectors_untimed"], scans
        assert "ANY" in str(scans[0].get("Index Cond")), scans  # probed by the rounds' ids, not read through
