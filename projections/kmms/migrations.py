"""Migrations 13, 14, 20, 24-27 and 29-39: KMMS — the kmms processors' state (``kmmsproc``) and the KMMS read
model (``kmms``); erasure (14); full-text candidates through the text index under row-level security (20); the
lexemes too common to select candidates by (24); vectors keyed by tenant, with their cause's position (25);
each vector's voice (26); each unit's words said by its owner, with their own full-text vector (27); BM25's
inputs without whole tsvectors: lengths stored, candidates with only the query's terms (29); full-text candidates
read with their neighbours (30, 31); the planner's statistics of a memory (32); a small memory's full-text
candidates found by reading its units (33); each vector with its unit's event time (34); a conversation's turns as a
layout over its content (35); each unit vector's token states (36); rows kept whole on their pages (37, 38); the
owner's words of 27 dropped (39)."""

from __future__ import annotations

from projections.kmms.read_model import KmmsProjection, vector_time_indexes
from projections.kmms.sql import UNIT_OF_SQL
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


_TERM_COUNTS_ARGS = "text, text, tsquery, text[], bigint, bigint, text, integer"


# A memory of fewer units than this has its full-text candidates found by reading its units (the memory's index),
# a larger one's by the text index (migration 33). The text index's entries are the whole tenant's: for a question
# of common words it returned 6,753 rows to find a LoCoMo memory's 346 (2.9 ms; ten times the tenant, ten times
# that), while reading the memory's 419 units and testing each took 0.9 ms, whatever else the tenant holds.
SCAN_BELOW = 2_000


def _candidates_by_size(select: str, column: str, using: str) -> str:
    """A plpgsql body running ``select`` (an EXECUTE string, its quotes doubled, whose ``{match}`` is where the
    unit's ``column`` must match the query, ``$3``) with a predicate that reads the memory's units one by one when it
    holds fewer than ``SCAN_BELOW`` of them, else with the one the text index serves. ``(tsv || '') @@ q`` is
    ``tsv @@ q`` that no index can serve: the same rows, found through the memory's index. ``using``: the
    EXECUTE's USING list."""
    small, large = f"(u.{column} || ''''::tsvector) @@ $3", f"u.{column} @@ $3"
    return f"""BEGIN
                IF EXISTS (SELECT 1 FROM kmms.kmms_units u WHERE u.tenant = current_setting('hivemem.tenant', true)
                           AND u.claw_id = p_claw AND u.scope = p_scope OFFSET {SCAN_BELOW - 1}) THEN
                    RETURN QUERY EXECUTE '{select.format(match=large)}'
                    USING {using};
                ELSE
                    RETURN QUERY EXECUTE '{select.format(match=small)}'
                    USING {using};
                END IF;
            END"""


def _term_counts(name: str, column: str, lexemes: str) -> str:
    select = f"""SELECT u.unit_id, u.{lexemes},
                    ts_filter(setweight(setweight(u.{column}, ''D''), ''A'', $4), ''{{{{a}}}}'')
                    FROM kmms.kmms_units u
                    WHERE u.tenant = current_setting(''hivemem.tenant'', true) AND u.claw_id = $1 AND u.scope = $2
                    AND u.occurred_at >= $5 AND u.occurred_at <= $6 AND ($7::text IS NULL OR u.thread_id = $7)
                    AND {{match}} ORDER BY u.occurred_at DESC, u.unit_id LIMIT $8"""
    body = _candidates_by_size(select, column, "p_claw, p_scope, p_query, p_terms, p_start, p_bound, p_thread, p_cap")
    return f"""CREATE OR REPLACE FUNCTION kmms.{name}(p_claw text, p_scope text, p_query tsquery, p_terms text[],
                p_start bigint, p_bound bigint, p_thread text, p_cap integer)
                RETURNS TABLE (unit_id text, lexemes integer, terms tsvector)
            LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
            {body} $$"""


def kmms_term_counts_migration() -> list[str]:
    """BM25's inputs read without reading whole tsvectors. A LongMemEval unit (an assistant's long reply) has a
    tsvector of a few kilobytes, and a search read them all to average their lengths and read its candidates'.

    - ``lexemes`` and ``said_lexemes`` of each unit, and ``lexemes`` of each node: a tsvector's length, stored
      (adding them rewrites the two tables). A memory's average length is read off them.
    - ``kmms.unit_text_terms`` and ``kmms.unit_said_terms``: migration 20's and 27's full-text candidates, each
      with its length and its tsvector cut to the lexemes of ``p_terms`` (the query's), positions kept, which
      BM25 ranks in the same statement (``projections.kmms.sql.bm25_ranking``): a LongMemEval search read
      about 200 KB of tsvector text and looked through it in Python for its few terms.
    - Migration 20's ``unit_text_matches`` has no caller left and goes; 27's ``unit_said_matches`` stays (a change
      named by a fact's value, ``projections.kmms.rerank``)."""
    return [
        "ALTER TABLE kmms.kmms_units ADD COLUMN IF NOT EXISTS lexemes int "
        "GENERATED ALWAYS AS (length(to_tsvector('english', text))) STORED",
        "ALTER TABLE kmms.kmms_units ADD COLUMN IF NOT EXISTS said_lexemes int "
        "GENERATED ALWAYS AS (length(to_tsvector('english', said))) STORED",
        "ALTER TABLE kmms.kmms_nodes ADD COLUMN IF NOT EXISTS lexemes int "
        "GENERATED ALWAYS AS (length(to_tsvector('english', cues || ' ' || content))) STORED",
        _term_counts("unit_text_terms", "tsv", "lexemes"),
        _term_counts("unit_said_terms", "said_tsv", "said_lexemes"),
        *(stmt for name in ("unit_text_terms", "unit_said_terms") for stmt in (
            f"REVOKE EXECUTE ON FUNCTION kmms.{name}({_TERM_COUNTS_ARGS}) FROM PUBLIC",
            f"GRANT EXECUTE ON FUNCTION kmms.{name}({_TERM_COUNTS_ARGS}) TO {APP_ROLE}")),
        f"DROP FUNCTION IF EXISTS kmms.unit_text_matches({_TEXT_MATCHES_ARGS})",
    ]  # fmt: skip


_WINDOW_TERMS_ARGS = f"{_TERM_COUNTS_ARGS}, double precision"


def _window_terms(name: str) -> str:
    # The units holding one of the query's lexemes (``m``, capped as ``unit_text_terms``'s), each read with its
    # neighbours in the episode (ordinal - 1 and + 1): its terms and theirs (tsvectors cut to the query's lexemes,
    # concatenated; its positions of weight A, theirs of weight B, which BM25 counts at NEIGHBOUR_WEIGHT), its
    # length and theirs. A neighbour outside ``m`` holds none of the query's lexemes: it adds no term, and the
    # memory's average unit length (``p_avg``) unless it is known to be absent (before ordinal 0). The neighbours
    # are the rows before and after it in ``m`` by episode and ordinal (lag, lead: one sort), when their ordinals
    # are next to its own (migration 31; migration 30 joined ``m`` to itself twice, three sorts). A small memory's
    # candidates are found by reading its units (``_candidates_by_size``, migration 33).
    select = """WITH m AS MATERIALIZED (SELECT u.unit_id, u.episode_id, u.ordinal, u.lexemes,
                        ts_filter(setweight(setweight(u.tsv, ''D''), ''A'', $4), ''{{a}}'') AS terms
                    FROM kmms.kmms_units u
                    WHERE u.tenant = current_setting(''hivemem.tenant'', true) AND u.claw_id = $1 AND u.scope = $2
                    AND u.occurred_at >= $5 AND u.occurred_at <= $6 AND ($7::text IS NULL OR u.thread_id = $7)
                    AND {match} ORDER BY u.occurred_at DESC, u.unit_id LIMIT $8)
                SELECT x.unit_id, x.lexemes + CASE WHEN x.ordinal = 0 THEN 0 WHEN x.b_ord = x.ordinal - 1 THEN x.b_lex
                        ELSE $9 END + CASE WHEN x.a_ord = x.ordinal + 1 THEN x.a_lex ELSE $9 END,
                    CASE WHEN x.b_ord = x.ordinal - 1 THEN setweight(x.b_terms, ''B'') ELSE ''''::tsvector END
                        || x.terms
                        || CASE WHEN x.a_ord = x.ordinal + 1 THEN setweight(x.a_terms, ''B'') ELSE ''''::tsvector END
                FROM (SELECT m.unit_id, m.ordinal, m.lexemes, m.terms, lag(m.ordinal) OVER w AS b_ord,
                        lag(m.lexemes) OVER w AS b_lex, lag(m.terms) OVER w AS b_terms, lead(m.ordinal) OVER w AS a_ord,
                        lead(m.lexemes) OVER w AS a_lex, lead(m.terms) OVER w AS a_terms
                    FROM m WINDOW w AS (PARTITION BY m.episode_id ORDER BY m.ordinal)) x"""
    body = _candidates_by_size(select, "tsv", "p_claw, p_scope, p_query, p_terms, p_start, p_bound, p_thread, p_cap, "
                               "p_avg")  # fmt: skip
    return f"""CREATE OR REPLACE FUNCTION kmms.{name}(p_claw text, p_scope text, p_query tsquery, p_terms text[],
                p_start bigint, p_bound bigint, p_thread text, p_cap integer, p_avg double precision)
                RETURNS TABLE (unit_id text, lexemes double precision, terms tsvector)
            LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
            {body} $$"""


def kmms_unit_windows_migration() -> list[str]:
    """``kmms.unit_window_terms``: full text's candidates read with their neighbours. A unit (a turn of a
    conversation, a round) ranks by BM25 over its words and those of the units before and after it in the same
    episode: an answer ("Yes, a sunset over the lake") shares few words with the question ("What did Melanie
    paint?"), the turn before it ("Did you paint anything lately, Melanie?") shares them (docs/kmms.md, "How the
    ranking was chosen"). The arguments of ``unit_text_terms`` (migration 29) and the memory's average unit length;
    the same rows, so ``bm25_ranking`` ranks either. Migration 31 replaces its body by today's (the same rows, found
    with one sort instead of three), which migration 30 also creates on a new database."""
    return [
        _window_terms("unit_window_terms"),
        f"REVOKE EXECUTE ON FUNCTION kmms.unit_window_terms({_WINDOW_TERMS_ARGS}) FROM PUBLIC",
        f"GRANT EXECUTE ON FUNCTION kmms.unit_window_terms({_WINDOW_TERMS_ARGS}) TO {APP_ROLE}",
    ]


def kmms_unit_windows_lag_migration() -> list[str]:
    """``kmms.unit_window_terms`` with each candidate's neighbours found by lag and lead over the candidates in
    episode and ordinal order: the same rows as migration 30's self-joins, with one sort instead of three (on a
    LoCoMo memory, about 3.9 instead of 5.8 ms a call, planning included)."""
    return [_window_terms("unit_window_terms")]


# The read model's tables a search filters by memory (tenant, claw, scope).
_MEMORY_TABLES = ("kmms_episodes", "kmms_units", "kmms_vectors", "kmms_nodes", "kmms_l0")


def kmms_small_memory_text_migration() -> list[str]:
    """A memory of fewer than ``SCAN_BELOW`` units has its full-text candidates found by reading its units, not
    through the text index (``_candidates_by_size``): the same rows from ``kmms.unit_text_terms``,
    ``unit_said_terms`` and ``unit_window_terms``, in a time that does not grow with the rest of the tenant.
    Migrations 29 and 30 create these bodies on a new database."""
    return [
        _term_counts("unit_text_terms", "tsv", "lexemes"),
        _term_counts("unit_said_terms", "said_tsv", "said_lexemes"),
        _window_terms("unit_window_terms"),
    ]


def kmms_memory_statistics_migration() -> list[str]:
    """Extended statistics on (tenant, claw_id, scope) of the tables a search reads by memory. A memory's scope
    (its user) almost names its claw, and the planner multiplied the two selectivities as if they were
    independent: with 90 memories in a tenant it expected 4 of a memory's 419 vectors and joined them to its
    units by a nested loop over all of them (87,571 rows filtered, 17.7 ms); the more memories, the worse.
    Functional dependencies give it the memory's own share (391 of 419 expected: a hash join, 1.6 ms).
    ``ANALYZE`` fills them now; autovacuum keeps them up to date."""
    out = []
    for table in _MEMORY_TABLES:
        out += [f"CREATE STATISTICS IF NOT EXISTS kmms.{table}_memory (dependencies) ON tenant, claw_id, scope "
                f"FROM kmms.{table}", f"ANALYZE kmms.{table}"]  # fmt: skip
    return out


def kmms_vector_time_migration() -> list[str]:
    """Each unit's and sentence's vector with its unit's event time, and indexed by it (``kmms_vectors_time``): a
    search's time window reads its vectors in one range scan instead of probing each unit's by id. Filling the
    column rewrites every vector's row, and each rewritten row is inserted again into the vector indexes; an
    HNSW insert costs far more than building the index anew, so the model indexes are dropped first and built
    again after. The table is locked until the migration commits: searches wait for it (at 100,000 episodes,
    404,561 vectors: the index built again in 56.5 s on two cores, the rewrite before it a few minutes)."""
    return [
        "ALTER TABLE kmms.kmms_vectors ADD COLUMN IF NOT EXISTS occurred_at bigint",
        _HNSW_AROUND.format(body=_VECTOR_TIMES),
        *vector_time_indexes("kmms"),
        "ANALYZE kmms.kmms_vectors",
    ]


_VECTOR_TIMES = (f"UPDATE kmms.kmms_vectors v SET occurred_at = u.occurred_at FROM kmms.kmms_units u "
                 f"WHERE v.kind IN ('unit', 'sentence') AND u.tenant = v.tenant AND u.unit_id = "
                 f"{UNIT_OF_SQL.format(v='v')} AND v.occurred_at IS DISTINCT FROM u.occurred_at")  # fmt: skip
# Runs ``body`` with the read model's HNSW indexes (one per model, ``read_model.index_name``) dropped, and builds
# them again after, as they were (their definitions as pg_indexes holds them).
_HNSW_AROUND = """DO $$
DECLARE defs text[];
DECLARE d text;
BEGIN
    SELECT coalesce(array_agg(indexdef), '{{}}') INTO defs FROM pg_indexes
        WHERE schemaname = 'kmms' AND tablename = 'kmms_vectors' AND indexdef LIKE '%USING hnsw%';
    EXECUTE (SELECT coalesce(string_agg(format('DROP INDEX kmms.%I', indexname), '; '), 'SELECT 1') FROM pg_indexes
        WHERE schemaname = 'kmms' AND tablename = 'kmms_vectors' AND indexdef LIKE '%USING hnsw%');
    EXECUTE $body${body}$body$;
    -- pgvector builds an HNSW graph fastest when it fits in maintenance_work_mem (~0.8 GB for 400,000 vectors).
    IF pg_size_bytes(current_setting('maintenance_work_mem')) < pg_size_bytes('1GB') THEN
        PERFORM set_config('maintenance_work_mem', '1GB', true);
    END IF;
    FOREACH d IN ARRAY defs LOOP
        EXECUTE d;
    END LOOP;
END $$"""


def kmms_turn_layout_migration() -> list[str]:
    """Each episode's turns as a layout over its content (``turn_layout``: role, name and length of each turn): an
    export carries a conversation's turns, and an import cuts the same rounds. An episode stored before has none
    (the log has its turns; the read model held only their rendered text) and is exported as its content alone,
    until ``hivemem replay --projection kmms`` rebuilds the read model from the log (that replay reports
    ``kmms_episodes`` different, by the layouts it fills in, and replaces the table)."""
    return ["ALTER TABLE kmms.kmms_episodes ADD COLUMN IF NOT EXISTS turn_layout jsonb NOT NULL DEFAULT '[]'"]


def kmms_vector_tokens_migration() -> list[str]:
    """Each unit vector's token states (``tokens``: the content pieces' states, ``governance.token_states``), which the
    search reads a round against the question with, word by word. A vector folded before has none (NULL): the search
    then ranks as it did (``governance.kmms.episode_rank.LOCOMO_WEIGHTS``) until the memory is embedded again (a
    model switch, docs/kmms.md) or ``hivemem replay --projection kmms`` folds the log's v3 records again. Stored out
    of line and uncompressed: signed bytes of projected states do not compress, and the HNSW scan reads rows without
    them."""
    return ["ALTER TABLE kmms.kmms_vectors ADD COLUMN IF NOT EXISTS tokens bytea",
            "ALTER TABLE kmms.kmms_vectors ALTER COLUMN tokens SET STORAGE EXTERNAL"]  # fmt: skip


def kmms_vector_inline_migration() -> list[str]:
    """A unit vector's row kept whole on its page, up to 8,160 bytes (its vector of 1,544 bytes and at most 4,096 of
    token states fit), not toasted. Past Postgres's default of 2 KB a row's largest out-of-line column went to the
    TOAST table: the token states, or, where they were the shorter, the vector itself (on LoCoMo 2,633 of 5,882
    rounds' states and 3,223 of their vectors). The exact nearest scan then read those vectors back through the TOAST
    index, and the late reading its 185-odd rounds' states the same way. Inline, on the dev stack's LoCoMo (2026-12-06,
    in process, 400 questions, three pairs of runs alternated, each statement's p50): the nearest vectors 4.2-5.4 ->
    3.2-4.0 ms, the states' read 2.7-2.8 -> 2.2-2.6 ms; the search's p50 24.4 -> 23.3 ms on average over six pairs
    (a shared machine: 20.7-26.8 ms run to run). A row written before stays as it was stored, and reads as before,
    until it is written again (a model switch embeds the memory again)."""
    return ["ALTER TABLE kmms.kmms_vectors SET (toast_tuple_target = 8160)"]


def kmms_unit_inline_migration() -> list[str]:
    """A unit's row kept whole on its page, up to 8,160 bytes, not toasted, as a vector's (migration 37). A round of a
    user-assistant chat (up to ``governance.kmms.units.MAX_CHARS`` characters) with its full-text vector and the
    owner's words is past Postgres's default of 2 KB: on RealMem about half the rounds' full-text vectors had gone
    to the TOAST table, and 40 % of their texts were compressed. Full text reads the vector of each of its up to
    2,000 candidates, through the TOAST index. Inline, on the dev stack's RealMem (2026-12-06, in process, 300
    queries, two runs each way, toasted and inline alternated): full text's statement p50 10.0-11.7 -> 8.8-9.9 ms,
    the search's p50 25.4-29.9 -> 24.4-26.6 ms. A row written before stays as it was stored until it is written
    again."""
    return ["ALTER TABLE kmms.kmms_units SET (toast_tuple_target = 8160)"]


def kmms_drop_said_migration() -> list[str]:
    """The words a unit's owner said (``said``, migration 27) dropped with their full-text vector, length and index
    and the functions that read them (``unit_said_terms``, ``unit_said_matches``, ``common_said_lexemes``): full
    text over the owner's words alone was removed on 2026-12-05 (docs/kmms-measurements.md, "Rules measured"), and
    no search has read them since, while every unit written still computed and indexed them (on the dev stack's five
    public corpora, 10 of the table's 74 MB and a 4.9 MB index). Postgres drops a column without rewriting the
    table: rows written before keep the bytes until they are written again or the table is vacuumed full."""
    return [
        f"DROP FUNCTION IF EXISTS kmms.unit_said_terms({_TERM_COUNTS_ARGS})",
        f"DROP FUNCTION IF EXISTS kmms.unit_said_matches({_TEXT_MATCHES_ARGS})",
        "DROP FUNCTION IF EXISTS kmms.common_said_lexemes(real)",
        "DROP INDEX IF EXISTS kmms.kmms_units_said_tsv",
        "ALTER TABLE kmms.kmms_units DROP COLUMN IF EXISTS said_lexemes",
        "ALTER TABLE kmms.kmms_units DROP COLUMN IF EXISTS said_tsv",
        "ALTER TABLE kmms.kmms_units DROP COLUMN IF EXISTS said",
    ]
