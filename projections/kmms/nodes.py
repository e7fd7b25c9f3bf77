"""The first stage over a memory's derived nodes (L1 abstractions, L2 facts, L3 summaries): their nearest vectors
and their full text ranked by Okapi BM25 (as the units are, ``projections.kmms.search``), fused by reciprocal rank;
then each candidate's row (``NodeRow``). Every query filters by tenant, claw and user (the memory) and by the
caller's time filter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from governance.kmms.fusion import rrf
from projections.kmms.config import SearchConfig
from projections.kmms.search import (
    BM25_CANDIDATES,
    OR_TSQUERY,
    Memory,
    Mode,
    bm25_ranked,
    bm25_stats,
    fusion_weights,
    ranked_ids,
)
from projections.kmms.sql import QUERY_TERMS, Conn, query_terms_of, vector_literal


async def _bm25_nodes(conn: Conn, where: str, p: dict[str, Any]) -> list[str]:
    """The ``n`` nodes passing ``where`` best by BM25 over their full text (cues and content), as the units are
    ranked (``ts_rank_cd`` has no inverse document frequency: a node matching "I" ranked with one matching the
    rare word the question is about). Candidates: the most recently logged matching nodes, at most
    ``BM25_CANDIDATES``; idf and the average length are the memory's nodes'."""
    total, avg_len, *_ = await bm25_stats(conn, p, "nodes", (
        "SELECT count(*), coalesce(avg(n.lexemes), 1), 0, 1.0 FROM kmms.kmms_nodes n "
        "WHERE n.tenant = %(t)s AND n.claw_id = %(c)s AND n.scope = %(s)s"))  # fmt: skip
    candidates = (f"SELECT n.node_id AS id, n.lexemes, {query_terms_of('n.tsv')} AS terms FROM kmms.kmms_nodes n, "
                  f"{OR_TSQUERY} WHERE {where} AND n.tsv @@ qq.q ORDER BY n.logged_at DESC, n.node_id "
                  "LIMIT %(cap)s")  # fmt: skip
    return await bm25_ranked(conn, candidates, QUERY_TERMS, {**p, "cap": BM25_CANDIDATES}, total, avg_len)


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


NODE_COLUMNS = ("n.node_id, n.layer, n.entity, n.topic, n.time_window, n.content, n.version, n.supersedes, "
                "n.superseded_by, n.status, n.valid_from, n.valid_until, n.event_time, n.fact_key, n.fact_value, "
                "n.fact_type, n.confidence, n.context, n.source_ids, n.strength, n.reinforcements, "
                "n.last_verified, n.logged_at, n.flagged")  # fmt: skip


def node_of(r: tuple[object, ...], fused: float = 0.0, similarity: float = 0.0) -> NodeRow:
    a: Any = r
    return NodeRow(str(a[0]), int(a[1]), str(a[2]), str(a[3]), a[4], str(a[5]), int(a[6]), a[7], a[8], str(a[9]),
                   int(a[10]), a[11], int(a[12]), a[13], a[14], a[15], float(a[16]), a[17], tuple(a[18] or ()),
                   float(a[19]), int(a[20]), a[21], int(a[22]), bool(a[23]), fused, similarity)  # fmt: skip


async def node_candidates(conn: Conn, m: Memory, vector: list[float] | None, model: str, text: str, mode: Mode,
                          time_filter: str, params: dict[str, Any], n: int, *,
                          cfg: SearchConfig) -> list[NodeRow]:  # fmt: skip
    """The ``n`` best L1–L3 nodes passing ``time_filter`` (SQL over ``n.``), by the fused ranking."""
    p: dict[str, Any] = {"t": m.tenant, "c": m.claw_id, "s": m.scope, "model": model, "text": text, "n": n, **params}
    where = f"n.tenant = %(t)s AND n.claw_id = %(c)s AND n.scope = %(s)s AND {time_filter}"
    rankings: list[list[str]] = []
    if vector is not None and mode in ("hybrid", "vector"):
        p["q"] = vector_literal(vector)
        rankings.append(await ranked_ids(conn, (
            "SELECT n.node_id FROM kmms.kmms_vectors v JOIN kmms.kmms_nodes n ON n.tenant = v.tenant "
            "AND n.node_id = v.unit_id WHERE v.model = %(model)s AND v.kind = 'node' AND v.tenant = %(t)s "
            f"AND v.claw_id = %(c)s AND v.scope = %(s)s AND {where} "
            "ORDER BY v.embedding <=> %(q)s::vector LIMIT %(n)s"), p))  # fmt: skip
    if mode in ("hybrid", "text") and text.strip():
        rankings.append(await _bm25_nodes(conn, where, p))
    fused = rrf(rankings, k=cfg.rrf_k, weights=fusion_weights(rankings, mode, cfg.text_weight))[:n]
    if not fused:
        return []
    p["ids"] = [u for u, _ in fused]
    sim = "1 - (v.embedding <=> %(q)s::vector)" if "q" in p else "0"
    cur = await conn.execute(  # type: ignore[arg-type]
        f"SELECT {NODE_COLUMNS}, coalesce({sim}, 0) FROM kmms.kmms_nodes n LEFT JOIN kmms.kmms_vectors v "
        "ON v.tenant = n.tenant AND v.unit_id = n.node_id AND v.model = %(model)s "
        "WHERE n.tenant = %(t)s AND n.node_id = ANY(%(ids)s)",
        p,
    )
    rows = {str(r[0]): r for r in await cur.fetchall()}
    score = dict(fused)
    return [node_of(r[:-1], score[i], float(str(r[-1]))) for i in p["ids"] if (r := rows.get(i)) is not None]
