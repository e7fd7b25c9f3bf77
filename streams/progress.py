"""Liveness: each processor's loop reports to ``hivemem.processor_progress``; /readyz reads it."""

from __future__ import annotations

import os

from streams.offsets import Conn

_UPSERT = """
INSERT INTO hivemem.processor_progress AS p (processor, pid, state, detail, heartbeat_at, last_batch_at, lag,
    records, refused)
VALUES (%(name)s, %(pid)s, %(state)s, %(detail)s, clock_timestamp(),
        CASE WHEN %(batch)s THEN clock_timestamp() END, %(lag)s, %(records)s, %(refused)s)
ON CONFLICT (processor) DO UPDATE SET pid = excluded.pid, state = excluded.state, detail = excluded.detail,
    heartbeat_at = excluded.heartbeat_at, last_batch_at = coalesce(excluded.last_batch_at, p.last_batch_at),
    lag = excluded.lag, records = p.records + excluded.records, refused = p.refused + excluded.refused
"""


def report(conn: Conn, name: str, state: str, *, lag: int = 0, records: int = 0, refused: int = 0,
           batch: bool = False, detail: str | None = None) -> None:  # fmt: skip
    conn.execute(_UPSERT, {"name": name, "pid": os.getpid(), "state": state, "detail": detail, "batch": batch,
                           "lag": lag, "records": records, "refused": refused})  # fmt: skip
