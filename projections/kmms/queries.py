"""KMMS retrieval, top-down (seed 000 §3): parse, route, drill L1 -> L2 -> L3 -> L4, score, hedge.

1. Parse: the query's vector, its temporal intent (``governance.kmms.temporal``: CURRENT,
   EVOLUTION, WINDOW, POINT_IN_TIME, UNSPECIFIED, relative dates resolved against ``as_of``), and
   which of its words the L0 index knows (entities and topics of this memory).
2. Route and drill: L1–L3 nodes and L4 episodes are retrieved (``projections.kmms.search``) under
   the intent's filter; layers are visited L1 -> L4 and the first sufficient one answers with its
   first hit in ranked order (``governance.kmms.sufficiency``: the signal words' minimum depth, then
   its closest hit's similarity >= tau and the query's entities covered). Each skipped layer says why.
3. Score: every hit gets seed Table 3's base for its layer plus the modifiers
   (``governance.kmms.confidence``); the answer's confidence is its top hit's (X-14). A CURRENT
   query that finds only superseded content returns it with -0.30 and says so (X-15).
4. Nothing whose event time is after ``as_of`` is a candidate, and a node's validity is judged at
   ``as_of``: a value superseded later is still the current one as of then (no future leaks).
"""

from __future__ import annotations

import itertools
import re
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from psycopg_pool import AsyncConnectionPool

from contracts import kmms_views as views
from governance.kmms.confidence import NodeSignals, score
from governance.kmms.ranking import best_units
from governance.kmms.search_config import DEFAULT, SearchConfig
from governance.kmms.strength import is_forgotten, strength_at
from governance.kmms.sufficiency import judge_layer, min_depth, threshold
from governance.kmms.temporal import TemporalIntent, parse_temporal
from projections.kmms.context import cited_sessions
from projections.kmms.nodes import NodeRow, node_candidates
from projections.kmms.rerank import first_stage, hit_similarities, outdated_facts
from projections.kmms.search import Memory, Mode, UnitHit
from projections.queries import side_by_side, tenant_tx
from projections.verdicts import Refused, poll_verdict, row_or_refusal

FAR_FUTURE = 2**62
TOLD_LATER_MS = 7 * 86_400_000
# X-17's tau, 0.75. all-MiniLM-L6-v2's question -> statement cosines sit lower than the seed's bge-small (a true
# match is typically 0.35-0.7), so few layers above the evidence are sufficient and the evidence answers: measured
# on public conversations, it answers better than a summary or a fact (governance/kmms/search_config.py). A
# question about the present is answered by a current fact from a lower threshold (``SearchConfig.tau_current``).
# All are settings (HIVEMEM_KMMS_TAU, HIVEMEM_KMMS_TAU_CURRENT, HIVEMEM_KMMS_ABSTAIN); docs/kmms.md.
TAU = 0.75
# The best similarity under which nothing in memory is about the query (HIVEMEM_KMMS_ABSTAIN; docs/kmms.md,
# "Abstention").
ABSTAIN_BELOW = 0.30


# The API's answer is declared once for the server and the SDK (contracts/kmms_views.py); here its times are ms.
View = views.View
MemoryHit = views.MemoryHit[int]
LayerStep = views.LayerStep
SearchResult = views.SearchResult[int]


def _words(text: str) -> list[str]:
    return sorted({w for w in re.findall(r"[a-z0-9][a-z0-9'-]*", text.lower()) if len(w) > 2})


async def known_terms(conn: Any, m: Memory, query: str) -> list[str]:
    """L0 routing: which of the query's words (and word pairs) are entities or topics of this memory; in a search of
    one thread (``m.thread_id``), of that thread's episodes (the L0 index is the whole memory's: read from the
    thread's episodes' own entities and topics, as the index is, lower-cased)."""
    words = _words(query)
    terms = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
    if m.thread_id is None:
        cur = await conn.execute(
            "SELECT DISTINCT term FROM kmms.kmms_l0 WHERE tenant = %s AND claw_id = %s AND scope = %s "
            "AND term = ANY(%s)", (m.tenant, m.claw_id, m.scope, terms))  # fmt: skip
    else:
        cur = await conn.execute(
            "SELECT DISTINCT lower(t) FROM kmms.kmms_episodes e CROSS JOIN LATERAL unnest(e.entities || e.topics) t "
            "WHERE e.tenant = %s AND e.claw_id = %s AND e.scope = %s AND e.thread_id = %s AND lower(t) = ANY(%s)",
            (m.tenant, m.claw_id, m.scope, m.thread_id, terms))  # fmt: skip
    return sorted(str(r[0]) for r in await cur.fetchall())


_PRONOUN = re.compile(r"\b(?:i|we|you|he|she|they|me|my|our)\b")


@dataclass(frozen=True)
class Question:
    """A question as read once at ``as_of``: its temporal intent, and the text embedded (``content_query``; full
    text reads ``query`` whole unless ``SearchConfig.text_dates`` is off)."""

    query: str
    as_of: int
    intent: TemporalIntent
    text: str


def read_question(query: str, as_of: int) -> Question:
    """``query``'s dates parsed once (``parse_temporal``), for the embedding and the search alike."""
    intent = parse_temporal(query, as_of)
    return Question(query, as_of, intent, _without_dates(query, intent))


def content_query(query: str, as_of: int) -> str:
    """The question without its date phrases ("in March", "last weekend", "now"): they say when to
    look, not what, and only dilute its vector (full text reads them: ``SearchConfig.text_dates``). Verb cues
    ("stayed", "did I live") stay: "Who stayed with me last weekend?" must not be embedded as "Who with me?"."""
    return read_question(query, as_of).text


def _without_dates(query: str, intent: TemporalIntent) -> str:
    text = query
    for c in intent.cues:
        if c != intent.verb_cue and not _PRONOUN.search(c):
            text = re.sub(rf"\b{re.escape(c)}\b", " ", text, flags=re.IGNORECASE)
    return " ".join(text.split()) or query


async def fact_chains(conn: Any, m: Memory, keys: list[tuple[str, str]], as_of: int, model: str,
                      vector: list[float] | None) -> list[NodeRow]:  # fmt: skip
    """Every version (known at ``as_of``) of each (entity, fact key), chains in the order given."""
    from projections.kmms.nodes import NODE_COLUMNS, node_of

    if not keys:
        return []
    sim = "1 - (v.embedding <=> %s::vector)" if vector is not None else "0"
    params: list[Any] = ["[" + ",".join(repr(float(x)) for x in vector) + "]"] if vector is not None else []
    cur = await conn.execute(
        f"SELECT {NODE_COLUMNS}, coalesce({sim}, 0) FROM kmms.kmms_nodes n LEFT JOIN kmms.kmms_vectors v "
        "ON v.tenant = n.tenant AND v.unit_id = n.node_id AND v.model = %s WHERE n.tenant = %s AND n.claw_id = %s "
        "AND n.scope = %s AND n.layer = 2 AND (n.entity, n.fact_key) IN (SELECT * FROM unnest(%s::text[], %s::text[])) "
        "AND n.valid_from <= %s AND n.event_time <= %s ORDER BY n.valid_from, n.version",
        (*params, model, m.tenant, m.claw_id, m.scope, [k[0] for k in keys], [k[1] for k in keys], as_of, as_of),
    )
    rows = [node_of(r[:-1], 0.0, float(str(r[-1]))) for r in await cur.fetchall()]
    order = {k: i for i, k in enumerate(keys)}
    return sorted(rows, key=lambda n: (order[(n.entity, n.fact_key or "")], n.valid_from, n.version))


def node_filter(intent: TemporalIntent, as_of: int) -> tuple[str, dict[str, Any]]:
    """SQL (over ``n.``) for the nodes an intent may see, judged at ``as_of``."""
    p: dict[str, Any] = {"as_of": as_of}
    known = "n.event_time <= %(as_of)s AND n.valid_from <= %(as_of)s"
    valid_at = "(n.valid_until IS NULL OR n.valid_until > %(at)s) AND n.valid_from <= %(at)s"
    if intent.kind == "EVOLUTION":
        return known, p
    if intent.kind == "WINDOW":
        p.update(ws=intent.start_ms if intent.start_ms is not None else -FAR_FUTURE,
                 we=intent.end_ms if intent.end_ms is not None else as_of)  # fmt: skip
        return f"{known} AND n.event_time >= %(ws)s AND n.valid_from <= %(we)s", p
    at = as_of
    if intent.kind == "POINT_IN_TIME" and intent.end_ms is not None:
        at = min(intent.end_ms, as_of)
    p["at"] = at
    return f"{known} AND {valid_at}", p


@dataclass(frozen=True)
class SearchParams:
    query: str
    vector: list[float] | None
    model: str
    k: int = 5
    as_of: int | None = None
    mode: Mode = "hybrid"
    tau: float = TAU
    abstain_below: float = ABSTAIN_BELOW
    # The question as the caller read it to embed it (``read_question``), so its dates are parsed once; read here
    # when None, or when it is another question's or read at another time than ``as_of``.
    question: Question | None = None
    # The question's token states (``governance.token_states.project``; None: the model gives none), with which the
    # first stage's best rounds are read word by word (``governance.kmms.late``).
    tokens: np.ndarray | None = None


def _hit_from_node(
    n: NodeRow, now: int, current_query: bool, outdated_by: str | None = None, sessions: list[str] | None = None
) -> MemoryHit:
    # Superseded as of ``now`` (the question's as_of): a node superseded later was the current one then, and
    # neither its status nor what superseded it may show (no future leaks), nor cost it confidence.
    superseded = n.status == "SUPERSEDED" and (n.valid_until is None or n.valid_until <= now)
    s = strength_at(n.strength, n.last_verified or n.logged_at, now)
    evidence = len(set(n.source_ids))
    signals = NodeSignals(n.layer, n.similarity, evidence, n.last_verified, s, superseded, outdated_by is not None)
    c = score(signals, now, current_query)
    return MemoryHit(layer=n.layer, node_id=n.node_id, score=round(n.fused, 6), similarity=round(n.similarity, 4),
                     confidence=c.value, hedging=c.hedging_prefix, layer_meaning=c.layer_meaning,
                     modifiers=[(name, d) for name, d in c.modifiers], text=n.content, valid_from=n.valid_from,
                     valid_until=n.valid_until if superseded else None,
                     status="SUPERSEDED" if superseded else "CURRENT", entity=n.entity, topic=n.topic,
                     fact_key=n.fact_key, fact_value=n.fact_value, version=n.version, supersedes=n.supersedes,
                     superseded_by=n.superseded_by if superseded else None, source_ids=list(n.source_ids),
                     session_ids=sessions or [], outdated_by=outdated_by, logged_at=n.logged_at)  # fmt: skip


def _hit_from_unit(u: UnitHit, now: int) -> MemoryHit:
    c = score(NodeSignals(4, u.similarity, 1, None, 1.0, False), now, False)
    hit = MemoryHit(layer=4, node_id=u.episode_id, score=round(u.fused, 6), similarity=round(u.similarity, 4),
                    confidence=c.value, hedging=c.hedging_prefix, layer_meaning=c.layer_meaning,
                    modifiers=[(name, d) for name, d in c.modifiers], text=u.text, episode_id=u.episode_id,
                    session_id=u.session_id, thread_id=u.thread_id or None, occurred_at=u.occurred_at,
                    valid_from=u.occurred_at, logged_at=u.logged_at)  # fmt: skip
    hit._round_id = u.unit_id  # ask's answer reads the units around it (projections.kmms.answer)
    return hit


async def search(pool: AsyncConnectionPool, m: Memory, sp: SearchParams, cfg: SearchConfig = DEFAULT) -> SearchResult:
    """``sp`` searched in memory ``m`` with the ranking's settings ``cfg`` (governance/kmms/search_config.py; the API
    passes the ones read at its start, ``ApiDeps.search``)."""
    started = time.perf_counter()
    now = int(time.time() * 1000)
    as_of = sp.as_of if sp.as_of is not None else now
    given = sp.question
    question = given if given and (given.query, given.as_of) == (sp.query, as_of) else read_question(sp.query, as_of)
    intent = question.intent
    # Full text reads the whole question (``cfg.text_dates``) or, as the vectors do, the question without its dates.
    text = sp.query if cfg.text_dates else question.text
    current_query = intent.kind in ("CURRENT", "UNSPECIFIED")
    windowed = intent.kind == "WINDOW" or (cfg.point_window and intent.kind == "POINT_IN_TIME")
    start = intent.start_ms if windowed else None
    # A session can tell of the window's events up to a week after it ("last weekend I bought...").
    bound = min(as_of, intent.end_ms + TOLD_LATER_MS) if windowed and intent.end_ms is not None else as_of
    async with tenant_tx(pool, m.tenant) as conn:
        terms = await known_terms(conn, m, sp.query)
        flt, params = node_filter(intent, as_of)

        async def derived(c: Any) -> tuple[list[NodeRow], bool]:  # the L1-L3 candidates, and whether X-15 applied
            nodes = await node_candidates(c, m, sp.vector, sp.model, text, sp.mode, flt, params, 3 * sp.k, cfg=cfg)
            if nodes or intent.kind != "CURRENT":
                return nodes, False
            # only superseded content matches
            nodes = await node_candidates(c, m, sp.vector, sp.model, text, sp.mode,
                                          "n.event_time <= %(as_of)s AND n.valid_from <= %(as_of)s",
                                          {"as_of": as_of}, 3 * sp.k, cfg=cfg)  # fmt: skip
            return nodes, bool(nodes)

        # The units' first stage and the derived nodes' candidates (with the sessions they cite) on two connections
        # at once (one when the pool has none to spare): neither reads the other's.
        units, (nodes, fallback) = await side_by_side(
            conn, pool, m.tenant, first_stage(conn, pool, m, sp.vector, sp.model, text, sp.mode, bound, start, as_of,
                                              4 * sp.k + 20, cfg=cfg, tokens=sp.tokens), derived)  # fmt: skip
        cited = {n.node_id: list(n.sessions) for n in nodes if n.sessions}
        if intent.kind == "EVOLUTION":  # the best facts' whole version chains, each in time order
            keys = list(dict.fromkeys((n.entity, n.fact_key) for n in nodes if n.layer == 2 and n.fact_key))
            chains = await fact_chains(conn, m, keys[:3], as_of, sp.model, sp.vector)
            cited |= await cited_sessions(conn, m, [n.node_id for n in chains if n.node_id not in cited])
            if m.thread_id is not None:  # a version read from another thread's episodes is that thread's
                chains = [n for n in chains if n.node_id in cited]
            nodes = [*chains, *(n for n in nodes if n.layer != 2)]
        ranked = best_units(units)[: sp.k]
        outdated: dict[str, int] = {}  # fact node id -> the index in ranked of a later hit on its topic
        if intent.kind == "CURRENT" and cfg.fact_topic <= 1:
            pairs = await hit_similarities(conn, m, sp.model, ranked)
            outdated = await outdated_facts(conn, m, ranked, pairs, nodes, cfg.fact_topic)
        later = {f: ranked[j].episode_id for f, j in outdated.items()}
    eval_at = as_of
    kept = [n for n in nodes if not is_forgotten(strength_at(n.strength, n.last_verified or n.logged_at, eval_at))
            or intent.kind == "EVOLUTION"]  # fmt: skip
    built: dict[int, MemoryHit] = {}

    def node_hit(i: int) -> MemoryHit:  # a candidate's hit, built when shown (k of 3k) or the best of its layer
        if i not in built:
            n = kept[i]
            built[i] = _hit_from_node(n, eval_at, current_query, later.get(n.node_id), cited.get(n.node_id, []))
        return built[i]

    l4 = [_hit_from_unit(u, eval_at) for u in ranked]
    floor, floor_reason = min_depth(sp.query)
    drill: list[LayerStep] = []
    visited: list[tuple[int, str]] = []  # (layer, node id): each layer's best, down to the answer
    answer: MemoryHit | None = None
    for layer in (1, 2, 3, 4):
        best: MemoryHit | None
        usable: list[MemoryHit] = []  # L4: the hits in ranked order, none a fact a later hit may have changed
        at: list[int] = []  # L1-L3: the layer's nodes in ranked order (indexes in kept), the same left out
        if layer == 4:
            usable = [h for h in l4 if h.outdated_by is None]
            best = max(usable, key=lambda h: h.similarity, default=None)
        else:  # the layer's best by a hit's (rounded) similarity, the first of equals, as over the hits themselves
            at = [i for i, n in enumerate(kept) if n.layer == layer and n.node_id not in later]
            first = max(at, key=lambda i: round(kept[i].similarity, 4), default=None)
            best = None if first is None else node_hit(first)
        covered = best is not None and all(t in (best.text + " " + (best.entity or "")).lower() for t in terms)
        tau = threshold(layer, sp.tau, intent.kind == "CURRENT" and not fallback, cfg.tau_current)
        v = judge_layer(layer, best.similarity if best else None, covered, floor, tau, floor_reason)
        drill.append(LayerStep(layer=layer, sufficient=v.sufficient and best is not None,
                               reason=v.reason if best is not None else "no candidate at this layer",
                               best_similarity=best.similarity if best else None))  # fmt: skip
        if v.sufficient and best is not None:
            # The layer answers with its first hit in the ranking's order (what `ask` shows), which its best
            # similarity made sufficient: the answer's confidence and hedging are that hit's.
            answer = usable[0] if layer == 4 else node_hit(at[0])
            break
        if best is not None:
            visited.append((layer, best.node_id))
    if answer is None:  # no layer sufficient: the deepest evidence found answers, hedged by its score
        answer = l4[0] if l4 else (node_hit(0) if kept else None)
    # The layers visited above the answer's, then the answer itself (not its layer's closest hit, when they differ).
    provenance = [n for layer, n in visited if answer is None or layer < answer.layer]
    provenance += [answer.node_id] if answer is not None else []
    # The best similarity says whether anything in memory is about the question (docs/kmms.md, "Abstention"). An L3
    # summary does not count: one of the owner's episodes is close to any question about the owner.
    best_sim = max([u.similarity for u in ranked] + [round(n.similarity, 4) for n in kept if n.layer != 3],
                   default=0.0)  # fmt: skip
    abstained = answer is None or (best_sim < sp.abstain_below and not terms)
    confidence = 0.0 if answer is None else answer.confidence
    if abstained and answer is not None:
        confidence = min(confidence, 0.30 if terms else 0.0)  # L0 at most: "I have something on this topic"
    context = [node_hit(i) for i in range(len(kept) if intent.kind == "EVOLUTION" else min(len(kept), sp.k))]
    # An outdated fact goes after the others: the later episode among the hits may have changed it.
    context = [*(h for h in context if h.outdated_by is None), *(h for h in context if h.outdated_by is not None)]
    if answer is not None and answer.layer < 4 and all(h.node_id != answer.node_id for h in context):
        context.append(answer)  # a node that answers is shown, even beyond the first k
    return SearchResult(
        query=sp.query, as_of=as_of, temporal_intent=intent.kind, window_start=intent.start_ms,
        window_end=intent.end_ms, temporal_cues=list(intent.cues), entities=terms,
        answer_layer=None if answer is None else answer.layer, confidence=confidence,
        hedging_prefix=_hedge(confidence), layer_meaning=None if answer is None else answer.layer_meaning,
        abstained=abstained, superseded_fallback=fallback, drill=drill, provenance=provenance, hits=l4,
        context=context, latency_ms=round((time.perf_counter() - started) * 1000, 3))  # fmt: skip


def _hedge(value: float) -> str | None:
    from governance.kmms.confidence import hedging

    return hedging(value)


class EpisodeVerdict(View):
    outcome: str  # STORED | REFUSED
    episode_id: str | None = None
    reason_code: str | None = None
    detail: str | None = None


async def episode_verdict(pool: AsyncConnectionPool, tenant: str, event_id: str) -> EpisodeVerdict | None:
    found = await row_or_refusal(pool, tenant, event_id, "SELECT episode_id FROM kmms.kmms_episodes "
                                 "WHERE tenant = %s AND envelope_event_id = %s")  # fmt: skip
    if isinstance(found, Refused):
        return EpisodeVerdict(outcome="REFUSED", reason_code=found.reason_code, detail=found.detail)
    return None if found is None else EpisodeVerdict(outcome="STORED", episode_id=str(found[0]))


async def wait_episode(pool: AsyncConnectionPool, tenant: str, event_id: str, wait_s: float) -> EpisodeVerdict | None:
    return await poll_verdict(episode_verdict, pool, tenant, event_id, wait_s)


# Which of the episodes %(ids)s of a memory (%(t)s, %(c)s, %(s)s) are searchable by model %(model)s (``indexed``).
# Derived nodes by their source links: episode -> L3 summary -> L2 fact -> L1 abstract. A node with no text to embed
# (no content, and not a fact, which is embedded as a sentence of its key and value: processors/kmms/embedder.py,
# ``node_text``) never gets a vector and is not waited for: an empty summary, which the consolidator wrote before
# 2026-11-29 for a window where the owner said nothing, held its episodes back for ever.
_SCOPE = "n.tenant = %(t)s AND n.claw_id = %(c)s AND n.scope = %(s)s"
_EMBEDDABLE = "(n.content <> '' OR (n.layer = 2 AND coalesce(n.fact_key, '') <> ''))"
INDEXED = (
    "WITH RECURSIVE derived(root, node_id, embeddable) AS ("
    f"SELECT e, n.node_id, {_EMBEDDABLE} FROM kmms.kmms_nodes n, unnest(%(ids)s::text[]) e WHERE {_SCOPE} "
    f"AND e = ANY(n.source_ids) UNION SELECT d.root, n.node_id, {_EMBEDDABLE} FROM kmms.kmms_nodes n JOIN derived d "
    f"ON d.node_id = ANY(n.source_ids) WHERE {_SCOPE}), "
    "units AS (SELECT u.episode_id AS root, u.unit_id AS id FROM kmms.kmms_units u WHERE u.tenant = %(t)s "
    "AND u.claw_id = %(c)s AND u.scope = %(s)s AND u.episode_id = ANY(%(ids)s)) "
    "SELECT a.root FROM (SELECT root, id FROM units UNION ALL SELECT root, node_id FROM derived WHERE embeddable) a "
    "LEFT JOIN kmms.kmms_vectors v ON v.tenant = %(t)s AND v.unit_id = a.id AND v.model = %(model)s "
    "WHERE a.root IN (SELECT root FROM units) GROUP BY a.root HAVING bool_and(v.unit_id IS NOT NULL)"
)


async def indexed(pool: AsyncConnectionPool, m: Memory, episode_ids: list[str], model: str) -> list[str]:
    """Which of ``episode_ids`` are searchable: stored, every unit has its vector, and so has every node
    consolidated from them so far that has text to embed (a fact the read model holds but cannot yet rank by
    meaning would lose to an older, embedded summary): ``INDEXED``."""
    async with tenant_tx(pool, m.tenant) as conn:
        cur = await conn.execute(
            INDEXED, {"model": model, "t": m.tenant, "c": m.claw_id, "s": m.scope, "ids": episode_ids}
        )
        return sorted(str(r[0]) for r in await cur.fetchall())


class L0Term(View):
    kind: str  # entity | topic
    term: str
    entity_kind: str | None
    first_seen: int
    episodes: int


async def l0_terms(pool: AsyncConnectionPool, m: Memory) -> list[L0Term]:
    async with tenant_tx(pool, m.tenant) as conn:
        cur = await conn.execute(
            "SELECT kind, term, entity_kind, first_seen, episodes FROM kmms.kmms_l0 WHERE tenant = %s AND "
            "claw_id = %s AND scope = %s ORDER BY kind, episodes DESC, term",
            (m.tenant, m.claw_id, m.scope),
        )
        rows: list[Any] = await cur.fetchall()
    return [L0Term(kind=a, term=b, entity_kind=c, first_seen=d, episodes=e) for a, b, c, d, e in rows]


async def facts(pool: AsyncConnectionPool, m: Memory, key: str | None, entity: str | None,
                include_superseded: bool) -> list[MemoryHit]:  # fmt: skip
    from projections.kmms.nodes import NODE_COLUMNS, node_of

    async with tenant_tx(pool, m.tenant) as conn:
        cur = await conn.execute(
            f"SELECT {NODE_COLUMNS} FROM kmms.kmms_nodes n WHERE n.tenant = %s AND n.claw_id = %s AND n.scope = %s "
            "AND n.layer = 2 AND (%s::text IS NULL OR n.fact_key = %s) AND (%s::text IS NULL OR n.entity = %s) "
            "AND (%s OR n.status = 'CURRENT') ORDER BY n.entity, n.fact_key, n.valid_from, n.version",
            (m.tenant, m.claw_id, m.scope, key, key, entity, entity, include_superseded),
        )
        rows = await cur.fetchall()
    now = int(time.time() * 1000)
    return [_hit_from_node(node_of(r, 0.0, 1.0), now, not include_superseded) for r in rows]
