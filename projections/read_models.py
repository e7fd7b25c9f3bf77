"""Each read model: its tables (DDL under a schema name), how it folds records, its digest."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import psycopg

from contracts.topics import TopicNames
from streams.records import LogRecord

APP_ROLE = "hivemem_app"


@dataclass(frozen=True)
class DigestTable:
    """A table of a read model as its digest reads it. ``columns``: every stored column but the wall-clock ones
    (``wall_clock``), each maybe as an expression ``... AS name``; a replay leaves a table whose digest is equal
    as it is (tests/integration/test_digest_columns.py holds the two lists to the table's columns)."""

    table: str
    columns: str
    order_by: str
    wall_clock: tuple[str, ...] = ()


class Projection(Protocol):
    name: str
    tables: tuple[DigestTable, ...]

    def topics(self, names: TopicNames) -> list[str]: ...

    def ddl(self, schema: str) -> list[str]: ...

    def fold(self, cur: psycopg.Cursor[tuple[object, ...]], schema: str, records: list[LogRecord]) -> None: ...


def tenant_table(schema: str, table: str) -> list[str]:
    """Row-level security: the app role sees only rows of the transaction's tenant."""
    return [
        f"ALTER TABLE {schema}.{table} ENABLE ROW LEVEL SECURITY",
        f"CREATE POLICY tenant_isolation ON {schema}.{table} FOR SELECT TO {APP_ROLE} "
        f"USING (tenant = current_setting('hivemem.tenant', true))",
        f"GRANT SELECT ON {schema}.{table} TO {APP_ROLE}",
    ]


def schema_ddl(schema: str) -> list[str]:
    return [f"CREATE SCHEMA {schema}", f"GRANT USAGE ON SCHEMA {schema} TO {APP_ROLE}"]


SMALL_BATCH = 64  # up to this many rows: one multi-row INSERT; more: COPY through a temp table


def copy_insert(cur: psycopg.Cursor[tuple[object, ...]], schema: str, table: str, cols: str,
                rows: list[tuple[object, ...]], types: Sequence[str] | None = None) -> None:  # fmt: skip
    """Insert rows that are new (``ON CONFLICT DO NOTHING``), in one statement for a small batch or
    by COPY for a large one: either is an order of magnitude faster than one INSERT per row. Columns
    left out take their defaults (e.g. ``projected_at``). ``types`` (Postgres type names, one a column):
    always COPY, in the binary format (a vector as pgvector's binary form, not 384 floats as text;
    ``projections.vectors.binary_types`` registers the vector type first).

    A large batch is copied straight into the table, in a savepoint. Only a row already stored (a
    re-delivered copy) can make that fail; then the batch goes through a session-local table and one
    ``INSERT ... SELECT ... ON CONFLICT DO NOTHING``. The straight copy writes each row once, where the
    staged one wrote it twice (into the local table, then into the table), and truncated the local table
    every batch: 12.7 tuples inserted per vote in ``bench governance``, of which 3.6 were staging."""
    if not rows:
        return
    if len(rows) <= SMALL_BATCH and types is None:
        one = "(" + ", ".join(["%s"] * len(rows[0])) + ")"
        cur.execute(f"INSERT INTO {schema}.{table} ({cols}) VALUES {', '.join([one] * len(rows))} "
                    "ON CONFLICT DO NOTHING", [v for row in rows for v in row])  # fmt: skip
        return
    fmt = "" if types is None else " (FORMAT BINARY)"
    try:
        with cur.connection.transaction(), cur.copy(f"COPY {schema}.{table} ({cols}) FROM STDIN{fmt}") as copy:
            _write(copy, rows, types)
        return
    except psycopg.errors.UniqueViolation:
        pass  # rolled back to the savepoint: staged below, where copies are skipped
    tmp = f"_fold_{schema}_{table}"
    # Created again after a rolled-back batch took it away; emptied of the previous batch.
    cur.execute(f"CREATE TEMP TABLE IF NOT EXISTS {tmp} AS SELECT {cols} FROM {schema}.{table} WITH NO DATA")
    cur.execute(f"TRUNCATE {tmp}")
    with cur.copy(f"COPY {tmp} ({cols}) FROM STDIN{fmt}") as copy:
        _write(copy, rows, types)
    cur.execute(f"INSERT INTO {schema}.{table} ({cols}) SELECT {cols} FROM {tmp} ON CONFLICT DO NOTHING")


def _write(copy: psycopg.Copy, rows: list[tuple[object, ...]], types: Sequence[str] | None) -> None:
    if types is not None:
        copy.set_types(list(types))
    for row in rows:
        copy.write_row(row)
