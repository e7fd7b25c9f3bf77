"""Migrations 13 and 14: KMMS — the kmms processors' state (``kmmsproc``) and the KMMS read model (``kmms``);
erasure (14)."""

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


def kmms_erasure_migration() -> list[str]:
    """Erasure: which memory each seen key belongs to (an erasure forgets them), each memory's erasure
    watermark, and the read model's erasure records."""
    return [
        "ALTER TABLE kmmsproc.seen ADD COLUMN IF NOT EXISTS scope text",
        "CREATE INDEX IF NOT EXISTS seen_scope ON kmmsproc.seen (scope)",
        "CREATE TABLE IF NOT EXISTS kmmsproc.erasures (scope text PRIMARY KEY, erased_at bigint NOT NULL)",
        *KmmsProjection.erasures_ddl("kmms"),
    ]
