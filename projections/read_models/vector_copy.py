"""Vectors into a read model in one binary COPY a batch (pgvector's binary format), not one INSERT each.

A vector went into its table as a ``'[0.1,0.2,...]'`` text literal per row: formatting 384 floats as text and
parsing them again was a third of a KMMS replay's fold, and the round trips most of the rest. Rows already
stored (a re-delivered batch) are skipped as ``copy_insert`` skips them: the batch is copied straight in, in a
savepoint, and only a unique violation sends it through a session-local table and ``ON CONFLICT DO NOTHING``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import psycopg
from pgvector.psycopg.vector import register_vector_info
from psycopg.types import TypeInfo

Cur = psycopg.Cursor[tuple[object, ...]]


def copy_vectors(cur: Cur, schema: str, table: str, cols: Sequence[str], types: Sequence[str],
                 rows: list[tuple[object, ...]]) -> None:  # fmt: skip
    """Insert ``rows`` (their vector as a float32 ``numpy`` array, column type ``vector``) that are new."""
    if not rows:
        return
    conn = cur.connection
    # The type's oid and its binary dumper: fetched once per connection, and given to this cursor too (a cursor
    # copies its connection's adapters when it is made, so one made before the first batch lacks them).
    info = conn.adapters.types.get("vector")
    if info is None:
        info = TypeInfo.fetch(conn, "vector")
        register_vector_info(conn, info)
    if cur.adapters.types.get("vector") is None:
        register_vector_info(cast(Any, cur), info)
    names = ", ".join(cols)
    try:
        with conn.transaction(), cur.copy(f"COPY {schema}.{table} ({names}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(list(types))
            for row in rows:
                copy.write_row(row)
        return
    except psycopg.errors.UniqueViolation:
        pass  # rolled back to the savepoint: staged below, where copies are skipped
    tmp = f"_vectors_{schema}_{table}"
    cur.execute(f"CREATE TEMP TABLE IF NOT EXISTS {tmp} AS SELECT {names} FROM {schema}.{table} WITH NO DATA")
    cur.execute(f"TRUNCATE {tmp}")
    with cur.copy(f"COPY {tmp} ({names}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(list(types))
        for row in rows:
            copy.write_row(row)
    cur.execute(f"INSERT INTO {schema}.{table} ({names}) SELECT {names} FROM {tmp} ON CONFLICT DO NOTHING")
