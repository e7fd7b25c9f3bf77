"""Each read model: its tables (DDL under a schema name), how it folds records, its digest."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import psycopg

from contracts.topics import TopicNames
from streams.records import LogRecord

APP_ROLE = "hivemem_app"


@dataclass(frozen=True)
class DigestTable:
    table: str
    columns: str  # the columns that define the model (no wall-clock columns)
    order_by: str


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
