"""Migration 17: CLAM — the clam processor's state (``clamproc``: each claw's short-term buffer,
long-term terms for linking, knowledge graph) and the CLAM read model (``clam``)."""

from __future__ import annotations

from projections.clam.read_model import ClamProjection


def clam_migration() -> list[str]:
    return [
        "CREATE SCHEMA clamproc",
        """CREATE TABLE clamproc.stm (tenant text NOT NULL, claw_id text NOT NULL, concept_id text NOT NULL,
            node jsonb NOT NULL, PRIMARY KEY (tenant, claw_id, concept_id))""",
        """CREATE TABLE clamproc.ltm (tenant text NOT NULL, claw_id text NOT NULL, concept_id text NOT NULL,
            terms text[] NOT NULL, PRIMARY KEY (tenant, claw_id, concept_id))""",
        """CREATE TABLE clamproc.triples (tenant text NOT NULL, claw_id text NOT NULL, triple_id text NOT NULL,
            subject text NOT NULL, predicate text NOT NULL, object text NOT NULL,
            PRIMARY KEY (tenant, claw_id, triple_id))""",
        *ClamProjection().ddl("clam"),
    ]
