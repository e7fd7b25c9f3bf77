"""Planner statistics for read-model tables that have never had any.

Postgres plans a table that was never analyzed with default selectivities, under which two indexes
can look equally cheap. Autovacuum visits a database once a minute, so a fresh read model that fills
quickly is queried blind for up to that long: in the memory benchmark, the search's similarity lookup
took the tenant-wide scope index of ``kmms_vectors`` once per hit (260 ms a search instead of 9 ms)
until the first automatic ANALYZE. A projector therefore analyzes each of its tables itself, once,
when it holds ``MIN_ROWS`` rows and has never been analyzed; autovacuum keeps them current after that.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import psycopg
from psycopg import sql

from streams.offsets import Conn

log = logging.getLogger(__name__)

MIN_ROWS = 500  # below this, any plan is fast
CHECK_EVERY_S = 5.0


class FirstStatistics:
    def __init__(self, schema: str, tables: Sequence[str]) -> None:
        self.schema = schema
        self._pending = set(tables)
        self._next_check = 0.0

    def maybe_analyze(self, conn: Conn) -> list[str]:
        """Analyze the pending tables that have grown enough; the ones analyzed now. Runs inside the
        caller's transaction, each ANALYZE in a savepoint: a failure is logged, never the batch's."""
        if not self._pending or time.monotonic() < self._next_check:
            return []
        self._next_check = time.monotonic() + CHECK_EVERY_S
        # reltuples < 0: never vacuumed or analyzed (kept in the catalog, unlike the activity statistics).
        rows = conn.execute(
            "SELECT c.relname, c.reltuples >= 0, coalesce(s.n_live_tup, 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid WHERE n.nspname = %s AND c.relname = ANY(%s)",
            (self.schema, sorted(self._pending)),
        ).fetchall()
        done = []
        for name, analyzed, live in rows:
            table = str(name)
            if analyzed:
                self._pending.discard(table)
            elif int(str(live)) >= MIN_ROWS:
                statement = sql.SQL("ANALYZE {}.{}").format(sql.Identifier(self.schema), sql.Identifier(table))
                try:
                    with conn.transaction():
                        conn.execute(statement)
                except psycopg.Error as exc:
                    if conn.broken or conn.closed:
                        raise
                    log.warning("ANALYZE %s.%s failed: %s", self.schema, table, exc)
                    continue
                self._pending.discard(table)
                done.append(table)
        return done
