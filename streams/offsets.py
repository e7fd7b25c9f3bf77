"""Input offsets, stored in Postgres with the effects (``hivemem.projection_offsets``)."""

from __future__ import annotations

import threading
from collections.abc import Iterable

import psycopg

from streams.kafka import TP
from streams.records import LogRecord

Conn = psycopg.Connection[tuple[object, ...]]


def stored_offsets(conn: Conn, processor: str) -> dict[TP, int]:
    """Next offset to process, per (topic, partition), as recorded with the effects."""
    rows = conn.execute("SELECT topic, partition, next_offset FROM hivemem.projection_offsets "
                        "WHERE consumer = %s", (processor,)).fetchall()  # fmt: skip
    return {(str(r[0]), int(str(r[1]))): int(str(r[2])) for r in rows}


def ends_of(records: Iterable[LogRecord]) -> dict[TP, int]:
    ends: dict[TP, int] = {}
    for r in records:
        ends[(r.topic, r.partition)] = max(ends.get((r.topic, r.partition), 0), r.offset + 1)
    return ends


def store_offsets(conn: Conn, processor: str, records: Iterable[LogRecord]) -> None:
    """Advance ``processor``'s stored offsets past ``records``, in the caller's transaction."""
    ends = ends_of(records)
    if not ends:
        return
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO hivemem.projection_offsets (consumer, topic, partition, next_offset) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT (consumer, topic, partition) DO UPDATE SET "
            "next_offset = GREATEST(projection_offsets.next_offset, excluded.next_offset), "
            "updated_at = clock_timestamp()",
            [(processor, t, p, o) for (t, p), o in ends.items()],
        )


def wait_advisory_lock(conn: Conn, name: str, stop: threading.Event) -> bool:
    """Hold the session lock ``name`` (one active instance; copies wait as standbys) or stop."""
    while not stop.is_set():
        row = conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (name,)).fetchone()
        if row and row[0]:
            return True
        stop.wait(1.0)
    return False
