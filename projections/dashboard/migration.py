"""Change notifications for the dashboard: statement-level triggers on the read-model tables it shows.

Each INSERT, UPDATE or DELETE *statement* on a watched table sends one ``pg_notify`` on
``hivemem_changes`` with the table and the distinct tenants it touched, read from the statement's
transition table. One per statement, not per row: a projector folds a batch in a few statements,
so 3,000 rows/s cost a few notifications, not 3,000. A statement that changed no rows (``ON
CONFLICT DO NOTHING`` on a replayed batch) sends nothing. Postgres delivers a NOTIFY when its
transaction commits, and folds identical ones of one transaction into one.
"""

from __future__ import annotations

CHANNEL = "hivemem_changes"

# Every watched table has a ``tenant`` column; the dashboard area(s) each feeds are in coalesce.py.
WATCHED = (
    "audit.events",
    "claws.claws",
    "governance.proposals",
    "governance.votes",
    "governance.decisions",
    "governance.refusals",
    "governance.facts",
    "caml.caml_reputation",
    "caml.caml_rep_events",
    "caml.caml_observations",
    "kmms.kmms_nodes",
    "kmms.kmms_episodes",
    "clam.stm",
    "clam.ltm",
    "clam.triples",
)
CLAM_WATCHED = ("clam.stm", "clam.ltm", "clam.triples")

# Payloads over 8,000 bytes are refused by Postgres: past this size the tenant list is dropped
# (null) and the hub refreshes every connected tenant of the area instead.
_MAX_PAYLOAD = 7000

_FUNCTION = f"""CREATE OR REPLACE FUNCTION hivemem.notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    tenants jsonb;
    payload text;
BEGIN
    SELECT jsonb_agg(t ORDER BY t) INTO tenants FROM (SELECT DISTINCT tenant AS t FROM changed) s;
    IF tenants IS NULL THEN
        RETURN NULL;  -- no row changed: no change, no message
    END IF;
    payload := jsonb_build_object('table', TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME, 'tenants', tenants)::text;
    IF octet_length(payload) > {_MAX_PAYLOAD} THEN
        payload := jsonb_build_object('table', TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME, 'tenants', NULL)::text;
    END IF;
    PERFORM pg_notify('{CHANNEL}', payload);
    RETURN NULL;
END $$"""


def _triggers(table: str) -> list[str]:
    # A trigger with transition tables may have one event only: three triggers, one function,
    # the transition table always called ``changed`` (the old rows for a DELETE).
    out = []
    for event, ref in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD")):
        name = f"dashboard_notify_{event.lower()}"
        out += [
            f"DROP TRIGGER IF EXISTS {name} ON {table}",
            f"CREATE TRIGGER {name} AFTER {event} ON {table} REFERENCING {ref} TABLE AS changed "
            f"FOR EACH STATEMENT EXECUTE FUNCTION hivemem.notify_change()",
        ]
    return out


def dashboard_migration() -> list[str]:
    """The trigger function and three statement triggers per watched table (idempotent)."""
    return [_FUNCTION, *[s for table in WATCHED for s in _triggers(table)]]


def clam_dashboard_migration() -> list[str]:
    """The CLAM tables' triggers, for a database where migration 18 ran before they were watched."""
    return [_FUNCTION, *[s for table in CLAM_WATCHED for s in _triggers(table)]]
