"""Migrations 13, 14, 20, 24, 25, 26 and 27: KMMS — the kmms processors' state (``kmmsproc``) and the KMMS read model
(``kmms``); erasure (14); full-text candidates through the text index under row-level security (20); the
lexemes too common to select candidates by (24); vectors keyed by tenant, with their cause's position (25);
each vector's voice (26); each unit's words said by its owner, with their own full-text vector (27)."""

from __future__ import annotations

from projections.kmms.read_model import KmmsProjection
from projections.read_models import APP_ROLE

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


_TEXT_MATCHES_ARGS = "text, text, tsquery, bigint, bigint, text, integer"


def _text_matches(name: str, column: str) -> str:
    return f"""CREATE OR REPLACE FUNCTION kmms.{name}(p_claw text, p_scope text, p_query tsquery, p_start bigint,
                p_bound bigint, p_thread text, p_cap integer) RETURNS TABLE (unit_id text, lexemes integer, tsv text)
            LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
            BEGIN
                RETURN QUERY EXECUTE 'SELECT u.unit_id, length(u.{column}), u.{column}::text FROM kmms.kmms_units u
                    WHERE u.tenant = current_setting(''hivemem.tenant'', true) AND u.claw_id = $1 AND u.scope = $2
                    AND u.occurred_at >= $4 AND u.occurred_at <= $5 AND ($6::text IS NULL OR u.thread_id = $6)
                    AND u.{column} @@ $3 ORDER BY u.occurred_at DESC, u.unit_id LIMIT $7'
                USING p_claw, p_scope, p_query, p_start, p_bound, p_thread, p_cap;
            END $$"""


def kmms_text_matches_migration() -> list[str]:
    """``kmms.unit_text_matches``: a memory's units holding any lexeme of a query, most recent first.

    Row-level security applies a query's own conditions only after the policy's, unless they are
    leakproof; ``@@`` is not, so the application role's full-text search could not use the text index and
    read the memory's units in time order, testing each (114 ms a search at 400,000 units). This function
    runs as the tables' owner, so the index is used, and it takes the tenant from the same transaction
    setting the policies read: it sees exactly the rows the policies would show. ``EXECUTE`` plans each call
    for its own words: a cached generic plan walked the time index even for a rare word (380 ms)."""
    return [
        _text_matches("unit_text_matches", "tsv"),
        f"REVOKE EXECUTE ON FUNCTION kmms.unit_text_matches({_TEXT_MATCHES_ARGS}) FROM PUBLIC",
        f"GRANT EXECUTE ON FUNCTION kmms.unit_text_matches({_TEXT_MATCHES_ARGS}) TO {APP_ROLE}",
    ]


def _common_lexemes(name: str, column: str) -> str:
    return f"""CREATE OR REPLACE FUNCTION kmms.{name}(p_min real) RETURNS SETOF text
            LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
                SELECT x.lexeme FROM pg_stats s,
                    unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS x(lexeme, share)
                WHERE s.schemaname = 'kmms' AND s.tablename = 'kmms_units' AND s.attname = '{column}'
                    AND x.lexeme IS NOT NULL AND x.share >= p_min
            $$"""


def kmms_common_lexemes_migration() -> list[str]:
    """``kmms.common_lexemes``: the lexemes at least ``p_min`` of the units hold, from the planner's statistics.

    A large memory's full-text candidates are its most recent units holding any query lexeme; for a lexeme a
    fiftieth of the units hold ("show", "work") that means reading every one of them (60-90 ms at 400,000 units)
    for a term BM25 gives almost no weight. The search leaves such lexemes out of the candidate query. The
    shares come from ``pg_stats`` (the table's most common elements, all memories together), which hides the
    statistics of a row-level-secured table from the application role: hence a function run as the owner. It
    returns lexemes only, never rows or counts of a tenant."""
    return [
        _common_lexemes("common_lexemes", "tsv"),
        "REVOKE EXECUTE ON FUNCTION kmms.common_lexemes(real) FROM PUBLIC",
        f"GRANT EXECUTE ON FUNCTION kmms.common_lexemes(real) TO {APP_ROLE}",
    ]


def kmms_vectors_tenant_key_migration() -> list[str]:
    """``kmms.kmms_vectors`` keyed by (tenant, unit, model), not (unit, model), and each vector with the
    position of its cause on ``hivemem.kmms.events``.

    Unit ids carry the episode id, which each tenant picks for itself: under the old key, a tenant's vector
    for ``ep-1#0`` kept another tenant's out (``ON CONFLICT DO NOTHING``), and which one won depended on
    how the two topics' partitions interleaved, so a replay could differ from the live model. An erasure
    deletes the vectors caused before it by that position (rows stored before this migration have none and
    go with their units and nodes, as before). Rebuilding the key reads the table once (seconds at 500,000
    vectors); on a new database it is empty."""
    return [
        "ALTER TABLE kmms.kmms_vectors ADD COLUMN IF NOT EXISTS cause_partition int",
        "ALTER TABLE kmms.kmms_vectors ADD COLUMN IF NOT EXISTS cause_offset bigint",
        "ALTER TABLE kmms.kmms_vectors DROP CONSTRAINT kmms_vectors_pkey",
        "ALTER TABLE kmms.kmms_vectors ADD CONSTRAINT kmms_vectors_pkey PRIMARY KEY (tenant, unit_id, model)",
    ]


def kmms_vector_voice_migration() -> list[str]:
    """Each vector's voice (``governance/kmms/voice.py``), the first stage's prior. Vectors embedded before have
    none (``''``: ranked as before, also after a replay: the voice is the embedder's); a new embedding model
    re-embeds the memory with them (docs/kmms.md, "Changing the embedding model")."""
    return ["ALTER TABLE kmms.kmms_vectors ADD COLUMN IF NOT EXISTS voice text NOT NULL DEFAULT ''"]


# The owner's lines of a unit's text, in SQL, as ``governance.kmms.phrasing.said_text`` gives them, for the rows
# stored before migration 27: a round's user lines; nothing for a piece of a conversation without any (an episode
# whose turns were rendered as "role: text" lines); the whole text of a document's or a note's unit.
_SAID_BACKFILL = r"""UPDATE kmms.kmms_units u SET said = CASE
        WHEN u.text ~ '(^|\n)user: ' THEN array_to_string(ARRAY(SELECT substr(x.l, 7)
            FROM regexp_split_to_table(u.text, E'\n') WITH ORDINALITY AS x(l, n) WHERE left(x.l, 6) = 'user: '
            ORDER BY x.n), E'\n')
        WHEN EXISTS (SELECT 1 FROM kmms.kmms_units o WHERE o.tenant = u.tenant AND o.episode_id = u.episode_id
            AND o.text ~ '^(user|assistant|system|tool): ') THEN ''
        ELSE u.text END"""


def kmms_said_text_migration() -> list[str]:
    """Each unit's words said by its owner (``said``, ``governance.kmms.phrasing.said_text``) with their own
    full-text vector and index, and the two functions of migrations 20 and 24 over it: a question about the
    user's life ranks by full text what the user said, not the assistant's long replies (docs/kmms.md,
    "Retrieval"). Existing rows are filled from their text (adding the generated column rewrites the table)."""
    return [
        "ALTER TABLE kmms.kmms_units ADD COLUMN IF NOT EXISTS said text NOT NULL DEFAULT ''",
        _SAID_BACKFILL,
        "ALTER TABLE kmms.kmms_units ADD COLUMN IF NOT EXISTS said_tsv tsvector "
        "GENERATED ALWAYS AS (to_tsvector('english', said)) STORED",
        "CREATE INDEX IF NOT EXISTS kmms_units_said_tsv ON kmms.kmms_units USING gin (said_tsv)",
        _text_matches("unit_said_matches", "said_tsv"),
        f"REVOKE EXECUTE ON FUNCTION kmms.unit_said_matches({_TEXT_MATCHES_ARGS}) FROM PUBLIC",
        f"GRANT EXECUTE ON FUNCTION kmms.unit_said_matches({_TEXT_MATCHES_ARGS}) TO {APP_ROLE}",
        _common_lexemes("common_said_lexemes", "said_tsv"),
        "REVOKE EXECUTE ON FUNCTION kmms.common_said_lexemes(real) FROM PUBLIC",
        f"GRANT EXECUTE ON FUNCTION kmms.common_said_lexemes(real) TO {APP_ROLE}",
    ]
