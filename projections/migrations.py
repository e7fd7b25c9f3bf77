"""Database migrations: ordered, recorded in ``hivemem.schema_migrations``, run under a lock.

Also keeps the application role: a login role that is not the tables' owner, is not a
superuser and has NOBYPASSRLS, so row-level security always applies to the HTTP API.
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg
from psycopg import sql

from projections.caml.metrics_migration import caml_metrics_migration
from projections.caml.migrations import caml_migration
from projections.clam.migrations import clam_migration
from projections.dashboard.migration import clam_dashboard_migration, dashboard_migration
from projections.gate.audit import AuditProjection
from projections.gate.claws import ClawsProjection
from projections.http_migrations import HTTP_MIGRATION_10
from projections.kmms.migrations import (
    kmms_common_lexemes_migration,
    kmms_drop_said_migration,
    kmms_erasure_migration,
    kmms_memory_statistics_migration,
    kmms_migration,
    kmms_said_text_migration,
    kmms_small_memory_text_migration,
    kmms_term_counts_migration,
    kmms_text_matches_migration,
    kmms_turn_layout_migration,
    kmms_unit_inline_migration,
    kmms_unit_windows_lag_migration,
    kmms_unit_windows_migration,
    kmms_vector_inline_migration,
    kmms_vector_time_migration,
    kmms_vector_tokens_migration,
    kmms_vector_voice_migration,
    kmms_vectors_tenant_key_migration,
)
from projections.kmp.migrations import kmp_migration
from projections.kstar.migrations import kstar_migration
from projections.read_models import APP_ROLE
from projections.votes.read_model import GovernanceProjection

_LOCK_ID = 0x48495645  # "HIVE"

_BASE = [
    "CREATE SCHEMA IF NOT EXISTS hivemem",
    f"GRANT USAGE ON SCHEMA hivemem TO {APP_ROLE}",
    """CREATE TABLE hivemem.projection_offsets (
        consumer text NOT NULL,
        topic text NOT NULL,
        partition int NOT NULL,
        next_offset bigint NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (consumer, topic, partition))""",
    # Positions only, no tenant data: the API reads them to wait for consistency.
    f"GRANT SELECT ON hivemem.projection_offsets TO {APP_ROLE}",
    """CREATE TABLE hivemem.projection_failures (
        consumer text NOT NULL,
        topic text NOT NULL,
        partition int NOT NULL,
        "offset" bigint NOT NULL,
        error text NOT NULL,
        failed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (consumer, topic, partition, "offset"))""",
]

# The governance processor's own state (processors/votes/store.py); not for the app role.
_GOVERNANCE_STATE = [
    "CREATE SCHEMA govproc",
    """CREATE TABLE govproc.proposals (
        tenant text NOT NULL, proposal_id text NOT NULL, state jsonb NOT NULL,
        PRIMARY KEY (tenant, proposal_id))""",
    """CREATE TABLE govproc.presence (
        tenant text NOT NULL, claw_id text NOT NULL, last_seen bigint NOT NULL, ok boolean NOT NULL,
        PRIMARY KEY (tenant, claw_id))""",
    """CREATE TABLE govproc.facts (
        tenant text NOT NULL, fact_key text NOT NULL, version int NOT NULL, PRIMARY KEY (tenant, fact_key))""",
    """CREATE TABLE govproc.outbox (
        seq bigserial PRIMARY KEY, event_id text NOT NULL, topic text NOT NULL, partition int NOT NULL,
        key bytea, value bytea NOT NULL, sent boolean NOT NULL DEFAULT false)""",
    "CREATE INDEX outbox_unsent ON govproc.outbox (seq) WHERE NOT sent",
    # Where each output partition ended before the latest publish round began: after a crash
    # the processor reads from here to learn which outbox rows did reach Kafka.
    """CREATE TABLE govproc.publish_marks (
        topic text NOT NULL, partition int NOT NULL, from_offset bigint NOT NULL, PRIMARY KEY (topic, partition))""",
]


# The one stream runtime (streams/): every processor's outbox, publish marks and progress;
# processing failures of every processor (not only projectors) in one table; the gate's
# stores as migrations rather than ad-hoc DDL. Claim keys become SHA-256 digests (bounded,
# never NUL), rewritten in place so claims made before the upgrade still hold.
_STREAM_RUNTIME = [
    "ALTER TABLE hivemem.projection_failures RENAME TO processing_failures",
    "ALTER TABLE hivemem.processing_failures RENAME COLUMN consumer TO processor",
    "ALTER TABLE hivemem.processing_failures ADD COLUMN reference text",
    """CREATE TABLE hivemem.outbox (
        processor text NOT NULL, seq bigserial NOT NULL, topic text NOT NULL, partition int NOT NULL,
        key bytea, value bytea NOT NULL, headers bytea[] NOT NULL DEFAULT '{}',
        PRIMARY KEY (processor, seq))""",
    """CREATE TABLE hivemem.publish_marks (
        processor text NOT NULL, topic text NOT NULL, partition int NOT NULL, from_offset bigint NOT NULL,
        PRIMARY KEY (processor, topic, partition))""",
    # Liveness: each processor's loop writes here (a heartbeat even when idle); /readyz reads it.
    """CREATE TABLE hivemem.processor_progress (
        processor text PRIMARY KEY, pid int, state text NOT NULL, detail text,
        heartbeat_at timestamptz NOT NULL, last_batch_at timestamptz, lag bigint NOT NULL DEFAULT 0,
        records bigint NOT NULL DEFAULT 0, refused bigint NOT NULL DEFAULT 0)""",
    f"GRANT SELECT ON hivemem.processor_progress TO {APP_ROLE}",
    # Unsent governance outputs move to the shared outbox.
    """INSERT INTO hivemem.outbox (processor, topic, partition, key, value)
       SELECT 'governance-processor', topic, partition, key, value FROM govproc.outbox WHERE NOT sent ORDER BY seq""",
    "DROP TABLE govproc.outbox",
    "DROP TABLE govproc.publish_marks",
    "CREATE SCHEMA IF NOT EXISTS gate",
    """CREATE TABLE IF NOT EXISTS gate.claims (
        kind text NOT NULL, key text NOT NULL, topic text NOT NULL, partition int NOT NULL,
        "offset" bigint NOT NULL, log_time bigint NOT NULL, PRIMARY KEY (kind, key))""",
    "CREATE INDEX IF NOT EXISTS claims_replay_time ON gate.claims (log_time) WHERE kind = 'replay'",
    "UPDATE gate.claims SET key = encode(sha256(convert_to(key, 'UTF8')), 'hex')",
    """CREATE TABLE IF NOT EXISTS gate.claw_keys (
        tenant text NOT NULL, claw_id text NOT NULL, key_id text NOT NULL, public_key bytea NOT NULL,
        registered_at bigint NOT NULL, retired_at bigint, revoked_at bigint,
        PRIMARY KEY (tenant, claw_id, key_id))""",
    # One text form for a log position (topic:partition:offset) in read-model keys too.
    "UPDATE governance.votes SET source = regexp_replace(source, '/([0-9]+)/([0-9]+)$', ':\\1:\\2')",
    "UPDATE governance.refusals SET source = regexp_replace(source, '/([0-9]+)/([0-9]+)$', ':\\1:\\2')",
]

# The write paths ask why an eventId was refused (tenant, event_id, outcome 'REJECTED'): the old index on
# (tenant, outcome, reason_code) answered that by reading every refusal of the tenant, and no query filtered
# on reason codes through it (the counts scan the table). A partial index holds refusals only, so an
# accepted envelope's audit row maintains two indexes instead of three.
_AUDIT_REFUSALS = [
    "CREATE INDEX IF NOT EXISTS events_refused ON audit.events (tenant, event_id) WHERE outcome = 'REJECTED'",
    "DROP INDEX IF EXISTS audit.events_outcome",
]
# Each batch draws one outbox seq per output (nextval): 3.4 us a row in pg_stat_statements. A session caches
# 1,000 at a time instead. Seqs stay unique, and an owner's stay increasing: an owner writes from one session
# at a time, and a new session's block starts above every value handed out before (streams.outbox).
_OUTBOX_SEQ_CACHE = [
    "DO $$ BEGIN EXECUTE format('ALTER SEQUENCE %s CACHE 1000', pg_get_serial_sequence('hivemem.outbox', 'seq')); "
    "END $$",
]
# The governance processor rewrites a proposal's state (about 2 KB of JSON with five ballots) after each batch
# that touched it. As jsonb, Postgres parsed it and, past the 2 KB toast threshold, compressed it every time:
# 26 us an upsert. Stored as text, read back with pydantic's JSON parser, and kept inline up to a page.
_PROPOSAL_STATE_TEXT = [
    "ALTER TABLE govproc.proposals ALTER COLUMN state TYPE text USING state::text",
    "ALTER TABLE govproc.proposals SET (toast_tuple_target = 8160)",
]

# Each claw's heartbeat history (governance.votes.quorum.Presence) as JSON runs [[first, last, ok], ...]; a row
# from before has none and is read as its one heartbeat (last_seen, ok), which stays the latest.
_PRESENCE_HISTORY = ["ALTER TABLE govproc.presence ADD COLUMN IF NOT EXISTS runs text"]

MIGRATIONS: list[tuple[int, str, Callable[[], list[str]]]] = [
    (1, "base", lambda: _BASE),
    (2, "claws read model", lambda: ClawsProjection().ddl("claws")),
    (3, "audit read model", lambda: AuditProjection().ddl("audit")),
    (4, "audit counts for /metrics", lambda: [
        """CREATE FUNCTION hivemem.audit_counts() RETURNS TABLE (outcome text, reason_code text, n bigint)
           LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog AS
           $$ SELECT outcome, coalesce(reason_code, ''), count(*) FROM audit.events GROUP BY 1, 2 $$""",
        f"GRANT EXECUTE ON FUNCTION hivemem.audit_counts() TO {APP_ROLE}",
    ]),
    (5, "claw keys", lambda: ClawsProjection.keys_ddl("claws")),
    (6, "audit stage", lambda: ["ALTER TABLE audit.events ADD COLUMN IF NOT EXISTS stage text"]),
    (7, "governance processor state", lambda: _GOVERNANCE_STATE),
    (8, "governance read model", lambda: GovernanceProjection().ddl("governance")),
    (9, "one stream runtime", lambda: _STREAM_RUNTIME),
    (10, "consistency token check", lambda: HTTP_MIGRATION_10),
    (11, "caml", caml_migration),
    (12, "caml metrics", caml_metrics_migration),
    (13, "kmms", kmms_migration),
    (14, "kmms erasure", kmms_erasure_migration),
    (15, "kmp", kmp_migration),
    (16, "kstar", kstar_migration),
    (17, "clam", clam_migration),
    (18, "dashboard change notifications", dashboard_migration),
    (19, "dashboard: clam tables", clam_dashboard_migration),
    (20, "kmms full text under row-level security", kmms_text_matches_migration),
    (21, "audit: refusals by event id", lambda: _AUDIT_REFUSALS),
    (22, "outbox seqs drawn from a per-session cache", lambda: _OUTBOX_SEQ_CACHE),
    (23, "governance processor: proposal state as text", lambda: _PROPOSAL_STATE_TEXT),
    (24, "kmms: common lexemes left out of large memories' full-text candidates", kmms_common_lexemes_migration),
    (25, "kmms: vectors keyed by tenant, unit and model, with their causes", kmms_vectors_tenant_key_migration),
    (26, "kmms: each vector's voice", kmms_vector_voice_migration),
    (27, "kmms: each unit's words said by its owner, with a full-text vector", kmms_said_text_migration),
    (28, "governance processor: each claw's heartbeat history", lambda: _PRESENCE_HISTORY),
    (29, "kmms: BM25's lengths stored, full-text candidates with only the query's terms", kmms_term_counts_migration),
    (30, "kmms: full-text candidates read with their neighbours", kmms_unit_windows_migration),
    (31, "kmms: full-text candidates' neighbours by lag and lead", kmms_unit_windows_lag_migration),
    (32, "kmms: the planner told that a memory's scope names its claw", kmms_memory_statistics_migration),
    (33, "kmms: a small memory's full-text candidates found by reading its units", kmms_small_memory_text_migration),
    (34, "kmms: each vector with its unit's event time, indexed", kmms_vector_time_migration),
    (35, "kmms: each episode's turns as a layout over its content", kmms_turn_layout_migration),
    (36, "kmms: each unit vector's token states", kmms_vector_tokens_migration),
    (37, "kmms: a unit vector's row kept whole on its page, not toasted", kmms_vector_inline_migration),
    (38, "kmms: a unit's row kept whole on its page, not toasted", kmms_unit_inline_migration),
    (39, "kmms: a unit's owner's words and their full-text vector dropped", kmms_drop_said_migration),
]  # fmt: skip


def ensure_app_role(conn: psycopg.Connection[tuple[object, ...]], password: str) -> None:
    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (APP_ROLE,)).fetchone()
    verb = "ALTER" if exists else "CREATE"
    conn.execute(sql.SQL("{} ROLE {} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE PASSWORD {}").format(
        sql.SQL(verb), sql.Identifier(APP_ROLE), sql.Literal(password)))  # fmt: skip


def migrate(url: str, app_password: str, announce: Callable[[int, str], object] | None = None) -> list[int]:
    """Apply pending migrations; return the versions applied now. ``announce(version, name)`` is called before
    each is applied (one may take minutes on a large read model: migration 34 rewrites every vector's row)."""
    applied: list[int] = []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (_LOCK_ID,))
        try:
            ensure_app_role(conn, app_password)
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute("CREATE SCHEMA IF NOT EXISTS hivemem")
            conn.execute("""CREATE TABLE IF NOT EXISTS hivemem.schema_migrations (
                version int PRIMARY KEY, name text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now())""")
            done = {r[0] for r in conn.execute("SELECT version FROM hivemem.schema_migrations")}
            for version, name, statements in MIGRATIONS:
                if version in done:
                    continue
                if announce is not None and done:  # a new database's first migrations are quick
                    announce(version, name)
                with conn.transaction():
                    for stmt in statements():
                        conn.execute(stmt)  # type: ignore[arg-type]
                    conn.execute("INSERT INTO hivemem.schema_migrations (version, name) VALUES (%s, %s)",
                                 (version, name))  # fmt: skip
                applied.append(version)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_ID,))
    return applied
