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


Column = tuple[str, str]  # name, SQL type with its constraints: ("known_at", "bigint NOT NULL")


@dataclass(frozen=True)
class Table:
    """A table of a read model, declared once: its CREATE TABLE statement (``create``), its insert column list
    (``names``) and what its digest reads (``digest``) all come from here. Indexes, policies and other DDL stay
    with the read model's ``ddl``.

    ``columns`` in the table's order; a column whose SQL says ``GENERATED ALWAYS AS`` is generated (computed
    from the others: neither inserted nor digested). ``primary_key`` is also the digest's row order; a one-column
    key is written on its column. ``wall_clock``: stored columns the digest skips (a projector's own time).
    ``digest_as``: a column the digest reads as an expression, ``(name, select item)``. ``digest_order``: the
    digest's column order where it is not the table's (the digests of live models were made in that order)."""

    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    wall_clock: tuple[str, ...] = ()
    digest_as: tuple[Column, ...] = ()
    digest_order: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        declared = [c for c, _ in self.columns]
        named = [*self.primary_key, *self.wall_clock, *(c for c, _ in self.digest_as), *self.digest_order]
        if len(set(declared)) != len(declared) or not set(named) <= set(declared):
            raise ValueError(f"{self.name}: a column named twice, or a name that is not a column")
        if self.digest_order and sorted(self.digest_order) != sorted(self.names.split(", ")):
            raise ValueError(f"{self.name}: digest_order must list each digested column once")

    @property
    def generated(self) -> tuple[str, ...]:
        return tuple(c for c, sql in self.columns if " GENERATED ALWAYS AS " in f" {sql.upper()} ")

    @property
    def names(self) -> str:
        """The columns a fold writes, in the table's order: every column but the generated and wall-clock ones."""
        skip = {*self.generated, *self.wall_clock}
        return ", ".join(c for c, _ in self.columns if c not in skip)

    def create(self, schema: str, if_not_exists: bool = False) -> str:
        one = self.primary_key[0] if len(self.primary_key) == 1 else None
        parts = [f"{c} {sql} PRIMARY KEY" if c == one else f"{c} {sql}" for c, sql in self.columns]
        if one is None:
            parts.append(f"PRIMARY KEY ({', '.join(self.primary_key)})")
        exists = " IF NOT EXISTS" if if_not_exists else ""
        return f"CREATE TABLE{exists} {schema}.{self.name} ({', '.join(parts)})"

    def digest(self) -> DigestTable:
        order = self.digest_order or tuple(self.names.split(", "))
        exprs = dict(self.digest_as)
        columns = ", ".join(exprs.get(c, c) for c in order)
        return DigestTable(self.name, columns, ", ".join(self.primary_key), self.wall_clock)


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
