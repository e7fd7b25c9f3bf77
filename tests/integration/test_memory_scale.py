"""``hivemem bench memory --scale``'s loader (bench/memory_scale.py) on the real read model: a memory grown
from its own stored episodes holds the target count, its copies carry moved vectors close to their
originals, the HNSW index is back, and search over HTTP finds the copies and nothing after ``as_of``."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, cast

import numpy as np
import pytest
from pgvector.psycopg import register_vector

from bench.memory_scale import build
from hivemem.stack import Stack
from producers.memory_client import MemoryClient
from tests.integration.kmms_support import chat, memory
from tests.integration.support import owner_db

pytestmark = pytest.mark.integration

SAID = [
    ("2026-02-01", "I adopted a grey cat called Miso from the shelter."),
    ("2026-02-10", "Our team moved the billing service from Postgres to DuckDB for the reports."),
    ("2026-02-20", "I ran my first half marathon in Porto, in 1 hour 52 minutes."),
]


def test_scale_grows_a_memory_with_moved_copies(stack: Stack) -> None:
    user, claw = f"u-{uuid.uuid4().hex[:6]}", f"scale-{uuid.uuid4().hex[:6]}"
    mem = memory(stack, "mem-b", claw=claw, user_id=user)
    ids = [mem.add(chat(text), session_id=f"s-{i}", occurred_at=f"{day}T09:00:00Z").episode_id
           for i, (day, text) in enumerate(SAID)]  # fmt: skip
    mem.wait_indexed(ids, timeout_s=120)

    try:
        _check_scaled(stack, mem, claw, user, ids)
    finally:  # the copies are not on the log: other tests' replays must find the read model as the log made it
        with owner_db(stack) as conn:
            for table, col in (("kmms_vectors", "unit_id"), ("kmms_units", "unit_id"), ("kmms_episodes", "episode_id")):
                conn.execute(f"DELETE FROM kmms.{table} WHERE tenant = 'mem-b' AND claw_id = %s AND {col} ~ %s",
                             (claw, "-x[0-9]+(#|$)"))  # fmt: skip


def _check_scaled(stack: Stack, mem: MemoryClient, claw: str, user: str, ids: list[str]) -> None:
    big = build(stack.settings.require_database(), "mem-b", claw, user, 12, only_own=True)
    assert big.episodes == 12 and big.units >= 9 and big.vectors >= 9
    with owner_db(stack) as conn:
        register_vector(conn)
        pairs = conn.execute(
            "SELECT o.embedding, c.embedding FROM kmms.kmms_vectors o JOIN kmms.kmms_vectors c "
            "ON c.unit_id = replace(o.unit_id, split_part(o.unit_id, '#', 1), split_part(o.unit_id, '#', 1) || '-x1') "
            "AND c.model = o.model WHERE o.tenant = 'mem-b' AND o.claw_id = %s AND o.unit_id = ANY(%s)",
            (claw, [f"{e}#0" for e in ids]),
        ).fetchall()
        indexes = conn.execute("SELECT count(*) FROM pg_indexes WHERE schemaname = 'kmms' AND tablename = "
                               "'kmms_vectors' AND indexdef ILIKE '%%hnsw%%'").fetchone()  # fmt: skip
    assert len(pairs) == 3
    for original, copy in pairs:
        a, b = (np.asarray(cast(Any, x).to_numpy()) for x in (original, copy))  # pgvector's Vector
        cos = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
        assert 0.9 < cos < 0.9999  # moved, but still about the same thing
    assert indexes is not None and int(str(indexes[0])) >= 1

    as_of = datetime(2026, 2, 15, tzinfo=UTC)
    res = mem.search("What pet did I adopt?", k=10, as_of=as_of)
    episodes = {h.episode_id for h in res.hits if h.layer == 4}
    assert any(e and e.startswith(f"{ids[0]}-x") for e in episodes)  # the copies are searchable
    assert all(h.occurred_at is None or h.occurred_at <= as_of for h in res.hits)
