"""Migration 15: KMP — the kmp processor's state (``kmpproc``) and the KMP read model (``kmp``)."""

from __future__ import annotations

from projections.kmp.read_model import KmpProjection


def kmp_migration() -> list[str]:
    return [
        "CREATE SCHEMA kmpproc",
        # Per about: its entry/evidence refs (kind 'ref') and its dimensions (kind 'dimension').
        """CREATE TABLE kmpproc.refs (tenant text NOT NULL, about text NOT NULL, kind text NOT NULL,
            ref text NOT NULL, PRIMARY KEY (tenant, about, kind, ref))""",
        *KmpProjection().ddl("kmp"),
    ]
