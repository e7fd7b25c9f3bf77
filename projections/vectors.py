"""pgvector on the read side: the HNSW index of a model's vectors (``index_name``, CAML's and KMMS's), how the
API's connections scan it (``hnsw_session``), and vectors into a read model in one binary COPY a batch (pgvector's
binary format), not one INSERT each.

A vector went into its table as a ``'[0.1,0.2,...]'`` text literal per row: formatting 384 floats as text and
parsing them again was a third of a KMMS replay's fold, and the round trips most of the rest. ``copy_insert``
with column types copies in the binary format; this registers pgvector's type on the connection first.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, cast

import psycopg
from pgvector.psycopg.vector import register_vector_info
from psycopg import AsyncConnection
from psycopg.types import TypeInfo

Cur = psycopg.Cursor[tuple[object, ...]]


def binary_types(cur: Cur, types: Sequence[str]) -> Sequence[str]:
    """``types`` (for ``copy_insert``), pgvector's ``vector`` registered on ``cur`` and its connection."""
    conn = cur.connection
    # The type's oid and its binary dumper: fetched once per connection, and given to this cursor too (a cursor
    # copies its connection's adapters when it is made, so one made before the first batch lacks them).
    info = conn.adapters.types.get("vector")
    if info is None:
        info = TypeInfo.fetch(conn, "vector")
        register_vector_info(conn, info)
    if cur.adapters.types.get("vector") is None:
        register_vector_info(cast(Any, cur), info)
    return types


def index_name(model: str) -> str:
    """The name of the HNSW index of ``model``'s vectors (a table may hold several models')."""
    return "emb_hnsw_" + hashlib.sha256(model.encode()).hexdigest()[:12]


async def hnsw_session(conn: AsyncConnection[Any]) -> None:
    """Set on each of the API's connections when its pool opens it: an HNSW scan looks at 100 candidates (pgvector's
    default is 40) and, when a filter leaves too few, scans on in relaxed order instead of answering short. Every
    connection has them, so a search ranks the same whichever connection each of its parts ran on; a query that
    wants others sets them for its transaction (``SET LOCAL``, CAML's recall)."""
    await conn.execute("SELECT set_config('hnsw.ef_search', '100', false), "
                       "set_config('hnsw.iterative_scan', 'relaxed_order', false)")  # fmt: skip
    await conn.commit()
