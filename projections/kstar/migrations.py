"""Migration 16: KSTAR — the kstar processor's state (``kstarproc``), the read model (``kstar``) and
the sync bookkeeping (``kstarsync``: per memory and remote, the cursors of the last sync and the
retry queue; operational state like offsets, not a read model)."""

from __future__ import annotations

from projections.kstar.read_model import KstarProjection
from projections.read_models import APP_ROLE


def kstar_migration() -> list[str]:
    return [
        "CREATE SCHEMA kstarproc",
        # Every memory's current records, as the processor judged them (docs/kstar.md).
        """CREATE TABLE kstarproc.records (tenant text NOT NULL, memory text NOT NULL, kind text NOT NULL,
            record_id text NOT NULL, name text NOT NULL, doc jsonb NOT NULL, content_hash text NOT NULL,
            PRIMARY KEY (tenant, memory, kind, record_id))""",
        "CREATE INDEX kstarproc_names ON kstarproc.records (tenant, memory, kind, name)",
        *KstarProjection().ddl("kstar"),
        "CREATE SCHEMA kstarsync",
        """CREATE TABLE kstarsync.state (tenant text NOT NULL, memory text NOT NULL, remote text NOT NULL,
            last_pulled bigint NOT NULL DEFAULT 0, last_pushed bigint NOT NULL DEFAULT 0,
            last_sync_at bigint, last_result jsonb, PRIMARY KEY (tenant, memory, remote))""",
        """CREATE TABLE kstarsync.pending (tenant text NOT NULL, memory text NOT NULL, remote text NOT NULL,
            kind text NOT NULL, record_id text NOT NULL, attempts int NOT NULL DEFAULT 0, last_error text,
            PRIMARY KEY (tenant, memory, remote, kind, record_id))""",
        # A sync runs in the API too (as the app role): its own tenant's rows only.
        f"GRANT USAGE ON SCHEMA kstarsync TO {APP_ROLE}",
        *[
            x
            for t in ("state", "pending")
            for x in (
                f"GRANT SELECT, INSERT, UPDATE, DELETE ON kstarsync.{t} TO {APP_ROLE}",
                f"ALTER TABLE kstarsync.{t} ENABLE ROW LEVEL SECURITY",
                f"CREATE POLICY tenant_isolation ON kstarsync.{t} FOR ALL TO {APP_ROLE} "
                "USING (tenant = current_setting('hivemem.tenant', true)) "
                "WITH CHECK (tenant = current_setting('hivemem.tenant', true))",
            )
        ],
    ]
