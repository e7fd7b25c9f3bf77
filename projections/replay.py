"""Rebuild a read model from the start of the log, compare digests, swap it in.

1. Fold every record, from offset 0 to the current end, into a shadow schema
   ``<name>__replay`` with the same DDL, as consumer ``<name>__replay``.
2. Lock the live tables (the live projector, if running, waits) and compare the live
   stored offsets with the shadow's. If the live model moved on, release, let the shadow
   catch up to it, and try again.
3. With both at the same log position: digest the live model's tables and the shadow's, replace
   the rows of each table whose digests differ with the rebuilt ones (a table whose digests are
   equal already holds them, and keeps its indexes), digest again, commit. Equal digests prove
   the read model is a pure function of the log; unequal ones come with the tables that differ
   and a few rows of each side (``ReplayResult.describe``). The live projector then carries on
   from the same offsets.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import psycopg

from contracts.topics import TopicNames
from projections.projector import ProjectionProcessor
from projections.read_models import DigestTable, Projection
from streams.kafka import TP, Watermarks
from streams.offsets import stored_offsets
from streams.runtime import StreamRuntime

REPLAY_BATCH = 5000  # records a batch of the shadow's fold: fewer commits and statements than the live 1,000
MAX_ROUNDS = 120  # rounds of up to 0.5 s waiting for the live projector
SAMPLE_ROWS = 3  # rows of each side shown for a table that differs
SAMPLE_CHARS = 240  # a row is cut to this many characters (a vector row is ~4 kB)

Conn = psycopg.Connection[tuple[object, ...]]


@dataclass(frozen=True)
class TableDifference:
    """One table whose live rows differ from the rebuilt ones, with a few rows of each side."""

    table: str
    only_live: int  # rows in the live model and not in the rebuilt one
    only_rebuilt: int
    live_sample: tuple[str, ...]
    rebuilt_sample: tuple[str, ...]

    def describe(self) -> str:
        lines = [f"{self.table}: {self.only_live} rows only live, {self.only_rebuilt} only rebuilt"]
        lines += [f"  live:    {r}" for r in self.live_sample] + [f"  rebuilt: {r}" for r in self.rebuilt_sample]
        return "\n".join(lines)


@dataclass(frozen=True)
class ReplayResult:
    projection: str
    records: int
    live_digest: str
    rebuilt_digest: str
    differences: tuple[TableDifference, ...] = ()
    # Records only one side could not fold (hivemem.processing_failures): a live failure that the replay
    # did not repeat (or the reverse) is a cause of a difference the rows alone do not show.
    live_failures: tuple[str, ...] = ()
    rebuilt_failures: tuple[str, ...] = ()
    phases: tuple[tuple[str, float], ...] = ()  # (what, seconds) of the swap's steps, for ``timings``
    moved: tuple[str, ...] = ()  # the tables whose rows were replaced (their digests differed)

    def timings(self) -> str:
        return ", ".join(f"{what} {seconds:.1f} s" for what, seconds in self.phases)

    @property
    def equal(self) -> bool:
        return self.live_digest == self.rebuilt_digest

    def describe(self) -> str:
        lines = [d.describe() for d in self.differences]
        lines += [f"failed live only:    {f}" for f in self.live_failures]
        lines += [f"failed rebuilt only: {f}" for f in self.rebuilt_failures]
        return "\n".join(lines)


def _rows_sql(t: DigestTable, schema: str) -> str:
    return f"SELECT row_to_json(t)::text AS r FROM (SELECT {t.columns} FROM {schema}.{t.table}) t"


def table_digests(conn: Conn, projection: Projection, schema: str, only: list[str] | None = None) -> dict[str, str]:
    """SHA-256 of each table's rows in key order (wall-clock columns left out); of the tables ``only`` if given."""
    out: dict[str, str] = {}
    for t in projection.tables:
        if only is not None and t.table not in only:
            continue
        order = ", ".join(f"t.{c.strip()}" for c in t.order_by.split(","))
        row = conn.execute(
            f"SELECT encode(sha256(convert_to(coalesce(string_agg(row_to_json(t)::text, E'\\n' ORDER BY {order}), "
            f"''), 'UTF8')), 'hex') FROM (SELECT {t.columns} FROM {schema}.{t.table}) t"
        ).fetchone()
        out[t.table] = str(row[0]) if row else ""
    return out


def digest(conn: Conn, projection: Projection, schema: str) -> str:
    """One SHA-256 over the tables' digests: equal digests, equal models."""
    return _combined(table_digests(conn, projection, schema))


def _combined(digests: dict[str, str]) -> str:
    h = hashlib.sha256()
    for table, d in digests.items():
        h.update(f"{table}:{d}\n".encode())
    return h.hexdigest()


def _failures(conn: Conn, processor: str) -> set[str]:
    rows = conn.execute('SELECT topic, partition, "offset", error FROM hivemem.processing_failures '
                        "WHERE processor = %s", (processor,)).fetchall()  # fmt: skip
    return {f"{r[0]}:{r[1]}:{r[2]} {str(r[3])[:SAMPLE_CHARS]}" for r in rows}


def failures_apart(conn: Conn, live: str, rebuilt: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The records that failed to fold on one side only (by position), each with its error."""
    a, b = _failures(conn, live), _failures(conn, rebuilt)

    def only(xs: set[str], ys: set[str]) -> tuple[str, ...]:
        elsewhere = {y.split(" ", 1)[0] for y in ys}
        return tuple(sorted(x for x in xs if x.split(" ", 1)[0] not in elsewhere)[:SAMPLE_ROWS])

    return only(a, b), only(b, a)


Digests = dict[str, str]  # table -> its digest (``table_digests``)


def differences(conn: Conn, projection: Projection, live: str, rebuilt: str,
                digests: tuple[Digests, Digests] | None = None) -> tuple[TableDifference, ...]:  # fmt: skip
    """The tables whose rows differ between two schemas, each with a sample of the rows of each side. ``digests``:
    the two schemas' ``table_digests`` when the caller has them already (else they are computed)."""
    a, b = digests or (table_digests(conn, projection, live), table_digests(conn, projection, rebuilt))
    out = []
    for t in projection.tables:
        if a[t.table] == b[t.table]:
            continue
        sides = []
        for x, y in ((live, rebuilt), (rebuilt, live)):
            rows = [str(r[0]) for r in conn.execute(f"{_rows_sql(t, x)} EXCEPT ALL {_rows_sql(t, y)}")]
            sides.append((len(rows), tuple(sorted(r[:SAMPLE_CHARS] for r in rows)[:SAMPLE_ROWS])))
        out.append(TableDifference(t.table, sides[0][0], sides[1][0], sides[0][1], sides[1][1]))
    return tuple(out)


def _offsets(conn: Conn, consumer: str) -> dict[TP, int]:
    return {tp: o for tp, o in stored_offsets(conn, consumer).items() if o > 0}


def _stored_columns(conn: Conn, schema: str, table: str) -> str:
    rows = conn.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND "
                        "table_name = %s AND is_generated = 'NEVER' ORDER BY ordinal_position",
                        (schema, table)).fetchall()  # fmt: skip
    return ", ".join(f'"{r[0]}"' for r in rows)


def _secondary_indexes(conn: psycopg.Connection[tuple[object, ...]], schema: str, table: str) -> list[tuple[str, str]]:
    """(name, CREATE INDEX statement) of the table's indexes that back no constraint."""
    rows = conn.execute(
        "SELECT i.indexname, i.indexdef FROM pg_indexes i WHERE i.schemaname = %s AND i.tablename = %s AND NOT EXISTS "
        "(SELECT 1 FROM pg_constraint c WHERE c.conindid = (quote_ident(i.schemaname) || '.' || "
        "quote_ident(i.indexname))::regclass) ORDER BY i.indexname", (schema, table)).fetchall()  # fmt: skip
    return [(str(n), str(d)) for n, d in rows]


def _swap(conn: psycopg.Connection[tuple[object, ...]], projection: Projection, shadow: str, shadow_consumer: str,
          processed: int, db_url: str) -> ReplayResult | None:  # fmt: skip
    """With the live tables locked: if the live model and the shadow have folded the same records, compare their
    digests, move the shadow's rows into each live table whose digest differs and drop the shadow; else nothing
    (None). A table whose digests are equal is left as it is: its rows are the rebuilt ones (the digest reads
    every column but the wall-clock ones), and a table of vectors keeps its HNSW index instead of building it
    again."""
    clock = _Clock()
    with conn.transaction():
        for t in projection.tables:
            conn.execute(f"LOCK TABLE {projection.name}.{t.table} IN EXCLUSIVE MODE")
        if _offsets(conn, projection.name) != _offsets(conn, shadow_consumer):
            return None
        clock.lap("locks")
        # The shadow's digest on a connection of its own, beside the live one's: the two take a core each.
        with ThreadPoolExecutor(1) as pool:
            shadow_digests = pool.submit(_digests_apart, db_url, projection, shadow)
            live = table_digests(conn, projection, projection.name)
            rebuilt = shadow_digests.result()
        clock.lap("digests")
        found = differences(conn, projection, projection.name, shadow, (live, rebuilt)) if rebuilt != live else ()
        failed = failures_apart(conn, projection.name, shadow_consumer) if found else ((), ())
        moved = [t for t in projection.tables if live[t.table] != rebuilt[t.table]]
        if moved:
            # Index builds in memory and on every core: an HNSW index that fits in maintenance_work_mem builds
            # several times faster than one spilled to disk (pgvector), and in parallel besides.
            conn.execute(f"SET LOCAL maintenance_work_mem = '{_build_memory_mb()}MB'")
            conn.execute(f"SET LOCAL max_parallel_maintenance_workers = {max(1, (os.cpu_count() or 1) - 1)}")
        for t in moved:
            conn.execute(f"TRUNCATE {projection.name}.{t.table}")
            cols = _stored_columns(conn, shadow, t.table)  # generated columns are recomputed
            # The table's own indexes (not its keys) are built again once it is filled: a bulk build is several
            # times faster than keeping them up to date row by row (an HNSW index most of all).
            rebuilt_indexes = _secondary_indexes(conn, projection.name, t.table)
            for name, _ in rebuilt_indexes:
                conn.execute(f"DROP INDEX {projection.name}.{name}")
            conn.execute(f"INSERT INTO {projection.name}.{t.table} ({cols}) SELECT {cols} FROM {shadow}.{t.table}")
            clock.lap(f"{t.table} copied")
            for _, definition in rebuilt_indexes:
                _build_index(conn, definition)
            if rebuilt_indexes:
                clock.lap(f"{t.table} indexed")
        after = {**live, **table_digests(conn, projection, projection.name, [t.table for t in moved])}
        if moved:
            clock.lap("digest after")
        conn.execute(f"DROP SCHEMA {shadow} CASCADE")
        conn.execute("DELETE FROM hivemem.projection_offsets WHERE consumer = %s", (shadow_consumer,))
        return ReplayResult(projection.name, processed, _combined(live), _combined(after), found, *failed,
                            phases=tuple(clock.laps), moved=tuple(t.table for t in moved))  # fmt: skip


def _digests_apart(db_url: str, projection: Projection, schema: str) -> dict[str, str]:
    with psycopg.connect(db_url, autocommit=True) as conn:
        return table_digests(conn, projection, schema)


def _build_memory_mb() -> int:
    """maintenance_work_mem for the swap's index builds: an eighth of the machine's memory, 64 MB to 1 GB (a
    parallel HNSW build asks for that much shared memory at once)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)
    except (ValueError, OSError):
        return 64
    return max(64, min(1024, total // 8))


def _build_index(conn: Conn, definition: str) -> None:
    """Build an index; if the server cannot give its build that much (shared) memory, as a container with a
    small /dev/shm cannot, build it again serially with the server's own setting."""
    try:
        with conn.transaction():  # a savepoint: a failed build leaves the swap's transaction usable
            conn.execute(definition)  # type: ignore[arg-type]
    except (psycopg.errors.DiskFull, psycopg.errors.OutOfMemory, psycopg.errors.InsufficientResources):
        conn.execute("SET LOCAL max_parallel_maintenance_workers = 0")
        conn.execute("RESET maintenance_work_mem")
        conn.execute(definition)  # type: ignore[arg-type]


class _Clock:
    """Seconds spent on each named step since the previous one."""

    def __init__(self) -> None:
        self.laps: list[tuple[str, float]] = []
        self._t = time.perf_counter()

    def lap(self, what: str) -> None:
        now = time.perf_counter()
        self.laps.append((what, now - self._t))
        self._t = now


def rebuild(
    projection: Projection, bootstrap: str, db_url: str, names: TopicNames,
    on_total: Callable[[int], None] | None = None, on_batch: Callable[[int], None] | None = None,
) -> ReplayResult:  # fmt: skip
    shadow, shadow_consumer = f"{projection.name}__replay", f"{projection.name}__replay"
    with psycopg.connect(db_url, autocommit=True, prepare_threshold=None) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {shadow} CASCADE")
        conn.execute("DELETE FROM hivemem.projection_offsets WHERE consumer = %s", (shadow_consumer,))
        conn.execute("DELETE FROM hivemem.processing_failures WHERE processor = %s", (shadow_consumer,))
        with conn.transaction():
            for stmt in projection.ddl(shadow):
                conn.execute(stmt)  # type: ignore[arg-type]
        watermarks = Watermarks(bootstrap)
        try:
            target = {tp: end for tp, end in watermarks(projection.topics(names)).items() if end > 0}
        finally:
            watermarks.close()
        if on_total is not None:
            on_total(sum(target.values()))
        shadow_processor = ProjectionProcessor(projection, names, schema=shadow, name=shadow_consumer)
        folder = StreamRuntime(shadow_processor, bootstrap, db_url, exclusive=False, report_progress=False,
                               on_batch=on_batch, durable=False, batch_size=REPLAY_BATCH)  # fmt: skip
        for _ in range(MAX_ROUNDS):
            folder.run(threading.Event(), until=target)
            try:
                swapped = _swap(conn, projection, shadow, shadow_consumer, folder.processed, db_url)
            except (psycopg.errors.DeadlockDetected, psycopg.errors.LockNotAvailable):
                # The live projector's batch took these tables in another order than the list: Postgres gave up
                # one of the two transactions. Nothing was swapped; fold on to where the live model is and retry.
                swapped = None
            if swapped is not None:
                return swapped
            live = _offsets(conn, projection.name)
            # Not at the same position: fold the shadow up to the live model, or wait for it.
            for tp, end in live.items():
                target[tp] = max(end, target.get(tp, 0))
            if any(live.get(tp, 0) < end for tp, end in target.items()):
                threading.Event().wait(0.5)
    raise RuntimeError(
        f"{projection.name}: the live read model did not reach the log's end; is its projector running (hivemem up)?"
    )
