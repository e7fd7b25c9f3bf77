"""A projector analyzes a table that has never had planner statistics once it holds enough rows
(projections/first_statistics.py), on the real Postgres."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from hivemem.stack import Stack
from projections.first_statistics import MIN_ROWS, FirstStatistics

pytestmark = pytest.mark.integration


def _analyzed(conn: psycopg.Connection[tuple[object, ...]], schema: str, table: str) -> bool:
    row = conn.execute("SELECT reltuples >= 0 FROM pg_class WHERE oid = %s::regclass", (f"{schema}.{table}",))
    return bool((one := row.fetchone()) and one[0])


def test_a_grown_table_is_analyzed_once_and_a_small_one_is_left(stack: Stack) -> None:
    schema = f"firststats_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(stack.settings.require_database(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        try:
            with conn.transaction():
                conn.execute(f"CREATE TABLE {schema}.big (id int PRIMARY KEY, v text)")
                conn.execute(f"CREATE TABLE {schema}.small (id int PRIMARY KEY)")
                conn.execute(f"INSERT INTO {schema}.big SELECT g, 'x' || g FROM generate_series(1, {MIN_ROWS + 100}) g")
                conn.execute(f"INSERT INTO {schema}.small SELECT g FROM generate_series(1, 10) g")
                conn.execute("SELECT pg_stat_force_next_flush()")  # the row counts reach pg_stat at commit
            assert not _analyzed(conn, schema, "big")
            stats = FirstStatistics(schema, ["big", "small"])
            with conn.transaction():
                assert stats.maybe_analyze(conn) == ["big"]
            assert _analyzed(conn, schema, "big") and not _analyzed(conn, schema, "small")
            assert conn.execute(f"SELECT count(*) FROM pg_stats WHERE schemaname = '{schema}' AND tablename = 'big'"
                                ).fetchone() == (2,)  # fmt: skip
            # Checked again only after CHECK_EVERY_S; and a table done is never analyzed again.
            assert stats.maybe_analyze(conn) == []
            stats._next_check = 0.0
            assert stats.maybe_analyze(conn) == [] and stats._pending == {"small"}
        finally:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
