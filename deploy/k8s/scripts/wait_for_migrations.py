"""Init container of every HiveMem Deployment: wait until the database has every migration
this image knows. The migration Job applies them; without the wait, a new release's services
would start on the old schema, fail on the first missing table and back off for minutes."""

from __future__ import annotations

import sys
import time

import psycopg

from hivemem.settings import Settings
from projections.migrations import MIGRATIONS

POLL_S = 3.0


def missing_versions(url: str) -> set[int]:
    want = {version for version, _, _ in MIGRATIONS}
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            rows = conn.execute("SELECT version FROM hivemem.schema_migrations").fetchall()
    except psycopg.errors.UndefinedTable:  # no migration has run yet
        return want
    return want - {int(r[0]) for r in rows}


def main() -> int:
    url = Settings.from_env().require_database()
    while True:
        try:
            missing = missing_versions(url)
        except psycopg.Error as exc:  # Postgres not reachable yet: keep waiting, say why
            print(f"waiting for Postgres: {type(exc).__name__}: {exc}".strip(), flush=True)
        else:
            if not missing:
                return 0
            print(f"waiting for the migration Job: versions {sorted(missing)} not applied yet", flush=True)
        time.sleep(POLL_S)


if __name__ == "__main__":
    sys.exit(main())
