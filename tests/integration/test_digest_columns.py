"""Each read model's digest reads every stored column of its tables but the declared wall-clock ones.

A replay leaves a table whose rebuilt digest equals the live one as it is (projections/replay.py): a column
the digest skipped would then keep whatever the live projector wrote, right or wrong. Generated columns are
left out (computed from the others).
"""

from __future__ import annotations

import re

from hivemem.services import projections
from hivemem.stack import Stack
from tests.integration.support import owner_db


def _names(columns: str) -> set[str]:
    """The column names of a digest's select list: ``a, b::text, md5(f(c)) AS c`` -> {a, b, c}."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(columns + ","):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(columns[start:i].strip())
            start = i + 1
    out = set()
    for part in parts:
        alias = re.search(r"\s+AS\s+(\w+)$", part, flags=re.IGNORECASE)
        out.add(alias.group(1) if alias else re.split(r"::|\s", part)[0])
    return out


def test_digests_cover_every_stored_column(stack: Stack) -> None:
    checked = 0
    with owner_db(stack) as conn:
        for name, projection in projections(stack.settings).items():
            schema = f"digest_check_{name}"
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            try:
                with conn.transaction():
                    for stmt in projection.ddl(schema):
                        conn.execute(stmt)  # type: ignore[arg-type]
                for t in projection.tables:
                    stored = {str(r[0]) for r in conn.execute(
                        "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND "
                        "table_name = %s AND is_generated = 'NEVER'", (schema, t.table))}  # fmt: skip
                    digested = _names(t.columns)
                    assert stored, f"{name}.{t.table}: no such table"
                    assert digested | set(t.wall_clock) == stored, f"{name}.{t.table}"
                    assert not digested & set(t.wall_clock), f"{name}.{t.table}"
                    checked += 1
            finally:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    assert checked >= 30
