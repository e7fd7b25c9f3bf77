"""The first stage over a memory's derived nodes (L1 abstractions, L2 facts, L3 summaries): their nearest vectors
and their full text ranked by Okapi BM25 (as the units are, ``projections.kmms.search``), fused by reciprocal rank;
then each candidate's row (``NodeRow``). Every query filters by tenant, claw and user (the memory) and by the
caller's time filter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from governance.kmms.fusion import rrf
from governance.kmms.ranking import fusion_weights
from governance.kmms.search_config import SearchConfig
from projections.kmms.context import CITED, IN_LANE
from projections.kmms.search import (
    BM25_CANDIDATES,
    OR_TSQUERY,
    Memory,
    Mode,
    keep_stats,
    kept_stats,
)
from projections.kmms.sql import QUERY_TERMS, Conn, bm25_ranking, query_terms_of, vector_literal

# BM25's statistics of the memory's nodes (count, average length in lexemes), read in the statement that ranks them
# while the memory is small (``projections.kmms.search.kept_stats``).
NODE_STATS = ("st AS MATERIALIZED (SELECT count(*) AS total, coalesce(avg(n.lexemes), 1)::float8 AS avg "
              "FROM kmms.kmms_nodes n WHERE n.tenant = %(t)s AND n.claw_id = %(c)s AND n.scope = %(s)s)")  # fmt: skip


def _bm25_nodes(where: str, p: dict[str, Any]) -> tuple[str, str]:
    """SQL of the ``n`` nodes passing ``where`` best by BM25 over their full text (cues and content), as the units are
    ranked (``ts_rank_cd`` has no inverse document frequency: a node matching "I" ranked with one matching the
    rare word the question is about), and of the common table expression it needs first ("" when none). Candidates:
    the most recently logged matching nodes, at most ``BM25_CANDIDATES``; idf and the average length are the
    memory's nodes': kept ones for a large memory (parameters bm25_total, bm25_avg, set here), else ``NODE_STATS``."""
    candidates = (f"SELECT n.node_id AS id, n.lexemes, {query_terms_of('n.tsv')} AS terms FROM kmms.kmms_nodes n, "
                  f"{OR_TSQUERY} WHERE {where} AND n.tsv @@ qq.q ORDER BY n.logged_at DESC, n.node_id "
                  "LIMIT %(cap)s")  # fmt: skip
    p["cap"] = BM25_CANDIDATES
    kept = kept_stats(p, "nodes")
    if kept is not None:
        p |= {"bm25_total": kept[0], "bm25_avg": kept[1]}
        return bm25_ranking(candidates, QUERY_TERMS), ""
    return bm25_ranking(candidates, QUERY_TERMS, "(SELECT st.total FROM st)", "(SELECT st.avg FROM st)"), NODE_STATS


@dataclass(frozen=True)
class NodeRow:
    node_id: str
    layer: int
    entity: str
    topic: str
    time_window: str | None
    content: str
    version: int
    supersedes: str | None
    superseded_by: str | None
    status: str
    valid_from: int
    valid_until: int | None
    event_time: int
    fact_key: str | None
    fact_value: str | None
    fact_type: str | None
    confidence: float
    context: str | None
    source_ids: tuple[str, ...]
    strength: float
    reinforcements: int
    last_verified: int | None
    logged_at: int
    flagged: bool
    fused: float = 0.0
    similarity: float = 0.0
    sessions: tuple[str, ...] = ()  # the sessions of the episodes it was derived from (``projections.kmms.context``)


NODE_COLUMNS = ("n.node_id, n.layer, n.entity, n.topic, n.time_window, n.content, n.version, n.supersedes, "
                "n.superseded_by, n.status, n.valid_from, n.valid_until, n.event_time, n.fact_key, n.fact_value, "
                "n.fact_type, n.confidence, n.context, n.source_ids, n.strength, n.reinforcements, "
                "n.last_verified, n.logged_at, n.flagged")  # fmt: skip


def node_of(r: tuple[object, ...], fused: float = 0.0, similarity: float = 0.0,
            sessions: tuple[str, ...] = ()) -> NodeRow:  # fmt: skip
    a: Any = r
    return NodeRow(str(a[0]), int(a[1]), str(a[2]), str(a[3]), a[4], str(a[5]), int(a[6]), a[7], a[8], str(a[9]),
                   int(a[10]), a[11], int(a[12]), a[13], a[14], a[15], float(a[16]), a[17], tuple(a[18] or ()),
                   float(a[19]), int(a[20]), a[21], int(a[22]), bool(a[23]), fused, similarity, sessions)  # fmt: skip


async def node_candidates(conn: Conn, m: Memory, vector: list[float] | None, model: str, text: str, mode: Mode,
                          time_filter: str, params: dict[str, Any], n: int, *,
                          cfg: SearchConfig) -> list[NodeRow]:  # fmt: skip
    """The ``n`` best L1–L3 nodes passing ``time_filter`` (SQL over ``n.``), by the fused ranking, each with the
    sessions it cites; in a search of one thread (``m.thread_id``), of those only the nodes read from that thread's
    episodes alone (``projections.kmms.context.IN_LANE``). Two statements: the two rankings (with the memory's
    statistics), then the rows. A search runs this beside the units' first stage, on the one thread that runs both:
    each statement it saves is about 0.3 ms of that thread's time and a wait for Postgres."""
    p: dict[str, Any] = {"t": m.tenant, "c": m.claw_id, "s": m.scope, "th": m.thread_id, "model": model, "text": text,
                         "n": n, **params}  # fmt: skip
    where = f"n.tenant = %(t)s AND n.claw_id = %(c)s AND n.scope = %(s)s AND {time_filter}"
    ctes, rankings = [], []
    if vector is not None and mode in ("hybrid", "vector"):
        p["q"] = vector_literal(vector)
        rankings.append("SELECT n.node_id FROM kmms.kmms_vectors v JOIN kmms.kmms_nodes n ON n.tenant = v.tenant "
                        "AND n.node_id = v.unit_id WHERE v.model = %(model)s AND v.kind = 'node' AND v.tenant = %(t)s "
                        f"AND v.claw_id = %(c)s AND v.scope = %(s)s AND {where} "
                        "ORDER BY v.embedding <=> %(q)s::vector LIMIT %(n)s")  # fmt: skip
    if mode in ("hybrid", "text") and text.strip():
        by_text, stats = _bm25_nodes(where, p)
        rankings.append(by_text)
        ctes += [stats] if stats else []
    if not rankings:
        return []
    with_ = f"WITH {', '.join(ctes)} " if ctes else ""
    read = ", ".join(f"ARRAY({r})" for r in rankings) + (", st.total, st.avg FROM st" if ctes else "")
    row: Any = await (await conn.execute(f"{with_}SELECT {read}", p)).fetchone()  # type: ignore[arg-type]
    if row is None:
        return []
    if ctes:  # the statistics it read: kept for the next search once the memory is large
        keep_stats(p, "nodes", (int(str(row[-2])), float(str(row[-1])), float(str(row[-1]))))
    ranked = [[str(x) for x in ids] for ids in row[: len(rankings)]]
    fused = rrf(ranked, k=cfg.rrf_k, weights=fusion_weights(ranked, mode, cfg.text_weight))[:n]
    if not fused:
        return []
    p["ids"] = [u for u, _ in fused]
    sim = "1 - (v.embedding <=> %(q)s::vector)" if "q" in p else "0"
    cur = await conn.execute(  # type: ignore[arg-type]
        f"WITH RECURSIVE {CITED} SELECT {NODE_COLUMNS}, coalesce({sim}, 0), ci.sessions FROM kmms.kmms_nodes n "
        "LEFT JOIN kmms.kmms_vectors v ON v.tenant = n.tenant AND v.unit_id = n.node_id AND v.model = %(model)s "
        f"LEFT JOIN cited ci ON ci.root = n.node_id WHERE n.tenant = %(t)s AND n.node_id = ANY(%(ids)s) AND {IN_LANE}",
        p,
    )
    rows: dict[str, Any] = {str(r[0]): r for r in await cur.fetchall()}
    score = dict(fused)
    return [node_of(r[:-2], score[i], float(str(r[-2])), tuple(str(x) for x in r[-1] or ()))
            for i in p["ids"] if (r := rows.get(i)) is not None]  # fmt: skip
