"""Migration 11: CAML — the caml processor's state (``camlproc``), the gate's run-time
suspensions (``gate.suspended``) and the CAML read model (``caml``)."""

from __future__ import annotations

from projections.caml.read_model import CamlProjection
from projections.read_models import APP_ROLE

_PROCESSOR_STATE = [
    "CREATE SCHEMA camlproc",
    """CREATE TABLE camlproc.deployments (
        tenant text NOT NULL, claw_id text NOT NULL, score double precision NOT NULL, seq bigint NOT NULL,
        suspended boolean NOT NULL, accepted_ms bigint[] NOT NULL, pii_ms bigint[] NOT NULL,
        last_bonus_ms bigint, pii_floor_ms bigint NOT NULL, PRIMARY KEY (tenant, claw_id))""",
    """CREATE TABLE camlproc.observations (
        observation_id text PRIMARY KEY, tenant text NOT NULL, claw_id text NOT NULL, kind text NOT NULL,
        created_ms bigint NOT NULL, validations int NOT NULL, refutations int NOT NULL, active boolean NOT NULL,
        promoted boolean NOT NULL)""",
    """CREATE TABLE camlproc.validations (
        observation_id text NOT NULL, tenant text NOT NULL, claw_id text NOT NULL,
        PRIMARY KEY (observation_id, tenant, claw_id))""",
    "CREATE TABLE camlproc.rate_attempts (id bigserial PRIMARY KEY, tenant text NOT NULL, at_ms bigint NOT NULL)",
    "CREATE INDEX rate_attempts_at ON camlproc.rate_attempts (at_ms)",
    """CREATE TABLE camlproc.pii_cache (
        tenant text NOT NULL, sha256 text NOT NULL, until_ms bigint NOT NULL, PRIMARY KEY (tenant, sha256))""",
    """CREATE TABLE gate.suspended (
        tenant text NOT NULL, claw_id text NOT NULL, since_ms bigint NOT NULL, PRIMARY KEY (tenant, claw_id))""",
]


# Operators (= tenants) and their tiers, mirrored from the tenants file when the API starts;
# configuration, not a fold of the log, so not part of the replayed read model.
_OPERATORS = [
    """CREATE TABLE caml.caml_operators (
        tenant text PRIMARY KEY, tier text NOT NULL, writes_per_hour int NOT NULL)""",
    f"GRANT SELECT ON caml.caml_operators TO {APP_ROLE}",
]


def caml_migration() -> list[str]:
    return [*_PROCESSOR_STATE, *CamlProjection().ddl("caml"), *_OPERATORS]
