"""Migration 13: KMMS — the kmms processors' state (``kmmsproc``) and the KMMS read model (``kmms``)."""

from __future__ import annotations

from projections.read_models.kmms import KmmsProjection

_PROCESSOR_STATE = [
    "CREATE SCHEMA kmmsproc",
    # "hash:<content hash>" and "id:<tenant>/<episode id>" -> the episode that holds them.
    "CREATE TABLE kmmsproc.seen (key text PRIMARY KEY, episode_id text NOT NULL)",
    """CREATE TABLE kmmsproc.memory (
        tenant text NOT NULL, claw_id text NOT NULL, scope text NOT NULL, state jsonb NOT NULL,
        PRIMARY KEY (tenant, claw_id, scope))""",
]


def kmms_migration() -> list[str]:
    return [*_PROCESSOR_STATE, *KmmsProjection().ddl("kmms")]
