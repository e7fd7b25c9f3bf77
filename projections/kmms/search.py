"""First-stage retrieval over one memory's read model: vector (pgvector HNSW, cosine; the statements are in
``projections.kmms.nearest``) and full text (the units holding any of the query's lexemes, ranked by Okapi BM25:
``governance.kmms.bm25``), fused by reciprocal rank (``governance.kmms.fusion.rrf``). Units (rounds/paragraphs of
L4 episodes) roll up to their episode by their best unit. L1–L3 nodes are ranked the same way
(``projections.kmms.nodes``).

Every query filters by tenant, claw and user (the memory), and by time: nothing whose event time
is after ``bound`` (the caller's ``as_of``) is ever a candidate.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from psycopg_pool import AsyncConnectionPool

from governance.kmms.bm25 import rare_terms
from governance.kmms.late import wanted
from governance.kmms.ranking import Fetched, Mode, fused_ranking, late_candidates, ranked
from governance.kmms.search_config import DEFAULT, SearchConfig
from governance.kmms.units import first_of_each_episode
from projections.kmms.nearest import EXACT_WINDOW, IN_SPAN, nearest, spare, window_count, window_ranking
from projections.kmms.sql import (
    QUERY_TERMS,
    UNIT_SIMILARITY,
    Conn,
    bm25_ranking,
    or_query,
    query_lexemes,
    vector_literal,
)
from projections.queries import side_by_side

# The first stage's fusion (docs/kmms.md, "Retrieval"): reciprocal rank with constant ``SearchConfig.rrf_k``, the
# full-text ranking weighted ``SearchConfig.text_weight`` against the vectors' 1 (governance/kmms/search_config.py).
# An OR of the query's lexemes (plainto_tsquery ANDs them: one missing word would drop a good hit).
OR_TSQUERY = "(SELECT replace(plainto_tsquery('english', %(text)s)::text, ' & ', ' | ')::tsquery AS q) qq"


@dataclass(frozen=True)
class Memory:
    tenant: str
    claw_id: str
    scope: str  # user id, "" = the claw's own memory
    thread_id: str | None = None


@dataclass(frozen=True)
class UnitHit:
    unit_id: str
    episode_id: str
    session_id: str
    thread_id: str
    text: str
    occurred_at: int
    logged_at: int
    fused: float
    similarity: float  # cosine similarity of the unit's best vector to the query (0 when it has no vector yet)


async def unit_candidates(conn: Conn, m: Memory, vector: list[float] | None, model: str, text: str, mode: Mode,
                          bound: int, start: int | None, n: int, pool: AsyncConnectionPool | None = None, *,
                          cfg: SearchConfig, best_only: bool = False,
                          tokens: np.ndarray | None = None) -> list[UnitHit]:  # fmt: skip
    """The ``n`` best units by the fused ranking (``governance.kmms.ranking.ranked`` over what ``fetch`` read),
    within [start, bound] of event time, with their text and similarity. ``cfg``: the search's settings. With
    ``best_only``, of the ``n`` only each episode's first is read and returned (the caller ranks episodes by their
    best unit, and no rule reorders the units before that): a LongMemEval-S search read 220 rounds' text for the
    40-odd it could show. ``tokens``: the question's token states (``governance.token_states.project``), with which
    the episode model reads the fused ranking's first rounds word by word (``governance.kmms.late``)."""
    p, fetched = await fetch(conn, m, vector, model, text, mode, bound, start, n, pool, cfg=cfg)
    first = fused_ranking(fetched, mode, n, cfg)
    late = None
    if cfg.late and tokens is not None and tokens.size and (candidates := late_candidates(first)):
        # The candidates' stored states and their neighbours' (``governance.kmms.late.wanted``), in one read: a memory
        # of user-assistant chats, whose rounds keep none, reads no rows, and the reading then does not count.
        late = (tokens, await read_token_states(conn, p, wanted(candidates)))
    fused = ranked(fetched, first, n, cfg, late)
    if not fused:
        return []
    # Each distance is exact: they are the units' similarities, which the read below then need not compute again
    # (~30 us a unit: most of a small memory's read).
    known = {u: 1.0 - d for u, d in fetched.best_distances.items()} if fetched.exact else {}
    if best_only:
        fused = first_of_each_episode(fused)
    p["ids"] = [u for u, _ in fused]
    sims = UNIT_SIMILARITY if "q" in p else "NULL::float8"
    if known:  # computed only for the units the scan did not rank (those full text alone found)
        p["known"] = [u for u in p["ids"] if u in known]
        sims = f"CASE WHEN u.unit_id = ANY(%(known)s) THEN NULL ELSE {sims} END"
    cur = await conn.execute(  # type: ignore[arg-type]
        f"SELECT u.unit_id, u.episode_id, u.session_id, u.thread_id, u.text, u.occurred_at, u.logged_at, "
        f"{sims} FROM kmms.kmms_units u WHERE u.tenant = %(t)s AND u.unit_id = ANY(%(ids)s)",
        p,
    )
    rows = {str(r[0]): r for r in await cur.fetchall()}
    return [unit_hit(rows[u], score, known.get(u)) for u, score in fused if u in rows]


async def read_token_states(conn: Conn, p: dict[str, Any], units: list[str]) -> dict[str, bytes]:
    """The stored token states (as stored: ``governance.token_states.encode``) of those of ``units`` that have them,
    in the search's model: one read by the vectors' key."""
    cur = await conn.execute(
        "SELECT v.unit_id, v.tokens FROM kmms.kmms_vectors v WHERE v.tenant = %(t)s AND v.model = %(model)s "
        "AND v.unit_id = ANY(%(units)s) AND v.tokens IS NOT NULL",
        {"t": p["t"], "model": p["model"], "units": units},
        binary=True,  # bytea as its bytes: as text, hex twice their size, parsed back (2 of 3 ms on LoCoMo)
    )
    rows: list[Any] = await cur.fetchall()
    return {str(r[0]): bytes(r[1]) for r in rows}


async def fetch(conn: Conn, m: Memory, vector: list[float] | None, model: str, text: str, mode: Mode, bound: int,
                start: int | None, n: int, pool: AsyncConnectionPool | None = None, *,
                cfg: SearchConfig) -> tuple[dict[str, Any], Fetched]:  # fmt: skip
    """What SQL returns for the first stage of one span of time, [start, bound] of event time: the units nearest
    ``vector`` (one row per vector) and full text's units by BM25; and the statement parameters the read of the
    ranked units reuses. Given the ``pool``, a large time window's exact ranking may use a second connection of it
    (``nearest.window_ranking``), and full text runs beside the nearest vectors on one."""
    lo = start if start is not None else -(2**62)
    p: dict[str, Any] = {"t": m.tenant, "c": m.claw_id, "s": m.scope, "model": model, "text": text, "n": n,
                         "bound": bound, "start": lo, "th": m.thread_id}  # fmt: skip
    where = IN_SPAN
    wants_text = mode in ("hybrid", "text") and bool(text.strip())
    wants_vector = vector is not None and mode in ("hybrid", "vector")
    if wants_text or wants_vector:
        p["stats"] = await _corpus_stats(conn, p)  # read once: both rankings need them
    by_text: list[tuple[str, float]] | None = None  # full text (unit, BM25), when it ran beside the nearest vectors
    near: list[tuple[str, float]] | None = None
    exact = False
    if wants_vector and vector is not None:
        p["q"] = vector_literal(vector)
        window = await window_count(conn, where, p) if start is not None else None
        units = p["stats"][0]
        small = units < EXACT_STATS_BELOW
        exact = small  # a small memory's distances are exact, and a small window's (below)
        if window is not None and window <= EXACT_WINDOW:
            exact = True
            # A window of few units: each unit's exact best distance (its own vector or a sentence's). The HNSW
            # scan below would walk the whole memory's nearest vectors to find the window's (250-340 ms for the
            # 7,000-12,000 units of a weekend at 100,000 episodes; this: 60-100 ms, 12-44 ms since migration 34).
            near = await window_ranking(conn, pool, m.tenant, where, p, window, cfg.split_window)
        elif wants_text and pool is not None and spare(pool):
            # Full text on a connection of its own, side by side with the nearest vectors (one core each).
            side = dict(p)
            near, by_text = await side_by_side(conn, pool, m.tenant,
                                               nearest(conn, where, p, 3 * n, units, small, window),
                                               lambda c: _bm25_units(c, side, prune=True,
                                                                     common_share=cfg.common_share,
                                                                     neighbours=cfg.text_neighbours))  # fmt: skip
        else:
            near = await nearest(conn, where, p, 3 * n, units, small, window)
    if wants_text and by_text is None:
        by_text = await _bm25_units(conn, p, prune=near is not None, common_share=cfg.common_share,
                                    neighbours=cfg.text_neighbours)  # fmt: skip
    return p, Fetched(near, by_text, exact)


def unit_hit(r: Sequence[object], fused: float, similarity: float | None = None) -> UnitHit:
    """A row of (unit_id, episode_id, session_id, thread_id, text, occurred_at, logged_at, ``UNIT_SIMILARITY``) as a
    hit with the ``fused`` score; given its ``similarity``, the row's is not read."""
    sim = similarity if similarity is not None else float(str(r[7])) if r[7] is not None else 0.0
    return UnitHit(str(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), int(str(r[5])), int(str(r[6])), fused, sim)


# A large memory's full-text candidates are selected by its query's lexemes that fewer than this share of the
# units hold (kmms.common_lexemes, migration 24), and ranked by those: a lexeme a fiftieth of the units hold
# means reading all of them (60-90 ms at 400,000 units) for a term BM25 weighs at next to nothing
# (``SearchConfig.common_share``; 1: off).
_common: tuple[float, frozenset[str]] = (-1e9, frozenset())  # (monotonic time read, the lexemes)
BM25_CANDIDATES = 2_000  # units holding a query lexeme, ranked in Python; a memory's recent ones first
# BM25's corpus statistics (units, average length) of a memory are read exactly while it is small; a large
# one's are kept this long per process: reading them means reading every unit's tsvector (140 ms at 400,000
# units), and a minute of new units moves an idf or the average length by a fraction of a percent.
EXACT_STATS_BELOW = 5_000
STATS_TTL_S = 60.0
# A memory's corpus' BM25 statistics: its units, their average length in lexemes and the average length of a unit's
# window (``_corpus_stats``); of the nodes: (nodes, their average length, their average length). Kept as (memory,
# corpus) -> (monotonic time, *stats).
Bm25Stats = tuple[int, float, float]
_stats: dict[tuple[str, str, str, str], tuple[float, int, float, float]] = {}


async def _lexemes_and_common(conn: Conn, p: dict[str, Any], common_share: float) -> tuple[list[str], frozenset[str]]:
    """The query's lexemes, and the common ones (held by more than ``common_share`` of the units; the set is read
    once a minute)."""
    global _common
    cur = await conn.execute("SELECT replace(plainto_tsquery('english', %(text)s)::text, ' & ', ' | ')", p)
    row = await cur.fetchone()
    terms = query_lexemes(str(row[0])) if row else []
    read_at, common = _common
    if terms and time.monotonic() - read_at > STATS_TTL_S:
        cur = await conn.execute("SELECT kmms.common_lexemes(%s::real)", (common_share,))
        common = frozenset(str(r[0]) for r in await cur.fetchall())
        _common = (time.monotonic(), common)
    return terms, common


async def _corpus_stats(conn: Conn, p: dict[str, Any]) -> Bm25Stats:
    """A memory's units and their average full-text length, and the average length of a unit's window (it and its
    neighbours in the episode, ``kmms.unit_window_terms``): three units a window, less two for each episode's first
    and last (a unit alone in its episode is its own window), each unit of the average length."""
    if "stats" in p:  # read already by this search (``unit_candidates``)
        return p["stats"]  # type: ignore[no-any-return]
    return await bm25_stats(conn, p, "units", (
        "SELECT count(*), coalesce(avg(u.lexemes), 1), coalesce(avg(u.lexemes) "
        "* (3 - 2 * count(*) FILTER (WHERE u.ordinal = 0)::float8 / greatest(count(*), 1)), 1) "
        "FROM kmms.kmms_units u WHERE u.tenant = %(t)s AND u.claw_id = %(c)s AND u.scope = %(s)s"))  # fmt: skip


async def bm25_stats(conn: Conn, p: dict[str, Any], corpus: str, sql: str) -> Bm25Stats:
    """BM25's statistics of one of the memory's corpora (``corpus``: its units or its nodes), read by ``sql``
    (count and average length first), exactly while the corpus is small and kept ``STATS_TTL_S`` once it is not."""
    cached = kept_stats(p, corpus)
    if cached is not None:
        return cached
    row = await (await conn.execute(sql, p)).fetchone()  # type: ignore[arg-type]
    got = (int(str(row[0])), float(str(row[1])), float(str(row[2]))) if row else (0, 1.0, 1.0)
    keep_stats(p, corpus, got)
    return got


def kept_stats(p: dict[str, Any], corpus: str) -> Bm25Stats | None:
    """A large corpus' statistics as read less than ``STATS_TTL_S`` ago (``bm25_stats``); None: read them now."""
    cached = _stats.get((str(p["t"]), str(p["c"]), str(p["s"]), corpus))
    if cached is not None and cached[1] >= EXACT_STATS_BELOW and time.monotonic() - cached[0] < STATS_TTL_S:
        return cached[1:]
    return None


def keep_stats(p: dict[str, Any], corpus: str, got: Bm25Stats) -> None:
    """Statistics just read, for ``kept_stats``."""
    if len(_stats) > 10_000:  # a bound, not an LRU: the API serves many memories, each re-read at its next search
        _stats.clear()
    _stats[(str(p["t"]), str(p["c"]), str(p["s"]), corpus)] = (time.monotonic(), *got)


async def _bm25_units(conn: Conn, p: dict[str, Any], prune: bool = True,
                      common_share: float = DEFAULT.common_share, neighbours: bool = DEFAULT.text_neighbours,
                      ) -> list[tuple[str, float]]:  # fmt: skip
    """Units by BM25, each with its score; with ``prune`` (a vector ranking stands beside it), a large memory's
    common lexemes left out (those more than ``common_share`` of its units hold). Full text alone (mode ``text``)
    keeps every lexeme: it is all there is. With ``neighbours``, each unit read with the units before and after it
    in its episode (``kmms.unit_window_terms``, migration 30)."""
    # Through kmms.unit_text_terms or unit_window_terms (migrations 29, 30): under row-level security a plain query
    # could not use the text index. They apply the same memory, time and thread conditions as ``where``, and return
    # of each candidate's tsvector only the query's terms.
    total, avg_units, avg_windows = await _corpus_stats(conn, p)
    avg_len = avg_windows if neighbours else avg_units
    query, tsq, ranked_by = f"{OR_TSQUERY}, ", "qq.q", QUERY_TERMS  # select by, and rank by, every query lexeme
    if prune and total >= EXACT_STATS_BELOW and common_share < 1:
        terms, common = await _lexemes_and_common(conn, p, common_share)
        rare = rare_terms(terms, common)
        if not rare:  # only common words: their candidates are the memory's most recent units, ranked by noise
            return []
        query, tsq, ranked_by = "", "%(rare)s::tsquery", "%(rare_terms)s::text[]"
        p = {**p, "rare": or_query(rare), "rare_terms": rare}
    fn = "unit_window_terms" if neighbours else "unit_text_terms"
    # A window's neighbour that holds none of the query's lexemes counts the memory's average length.
    avg_arg = ", %(avg_unit)s::float8" if neighbours else ""
    candidates = (f"SELECT m.unit_id AS id, m.lexemes, m.terms FROM {query}kmms.{fn}(%(c)s, %(s)s, {tsq}, "
                  f"{QUERY_TERMS}, %(start)s, %(bound)s, %(th)s, %(cap)s{avg_arg}) m")  # fmt: skip
    return await bm25_ranked(conn, candidates, ranked_by, {**p, "cap": BM25_CANDIDATES, "avg_unit": avg_units}, total,
                             avg_len)  # fmt: skip


async def bm25_ranked(conn: Conn, candidates: str, terms: str, p: dict[str, Any], total: int,
                      avg_len: float) -> list[tuple[str, float]]:  # fmt: skip
    """The ``p["n"]`` best of ``candidates`` by BM25, each with its score (``bm25_ranking``: rows of id, length in
    lexemes and tsvector, ``terms`` the query's lexemes); ``total`` and ``avg_len``: the corpus' (the memory's
    units or nodes)."""
    bm25 = {"bm25_total": total, "bm25_avg": avg_len}
    cur = await conn.execute(bm25_ranking(candidates, terms, scores=True), {**p, **bm25})  # type: ignore[arg-type]
    return [(str(r[0]), float(str(r[1]))) for r in await cur.fetchall()]


async def unit_similarities(conn: Conn, m: Memory, model: str, unit_ids: list[str]) -> dict[tuple[str, str], float]:
    """Cosine similarity of each pair of the units' own vectors (not their sentences'), keyed (a, b) with a < b."""
    cur = await conn.execute(
        "SELECT a.unit_id, b.unit_id, 1 - (a.embedding <=> b.embedding) FROM kmms.kmms_vectors a "
        "JOIN kmms.kmms_vectors b ON b.tenant = a.tenant AND b.model = a.model AND b.unit_id > a.unit_id "
        "WHERE a.tenant = %(t)s AND a.model = %(model)s AND a.unit_id = ANY(%(ids)s) AND b.unit_id = ANY(%(ids)s)",
        {"t": m.tenant, "model": model, "ids": unit_ids},
    )
    return {(str(a), str(b)): float(str(s)) for a, b, s in await cur.fetchall()}
