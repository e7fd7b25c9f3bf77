"""One area's current state for one tenant, read through the app role in ``tenant_tx`` (row-level
security applies). Tables readable by every tenant by design (the CAML pool and scores) are filtered
to the tenant explicitly: the dashboard shows a tenant its own data only.

Each snapshot is bounded (row limits) so a push stays small whatever the read model holds.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from projections.queries import tenant_tx

Conn = AsyncConnection[tuple[object, ...]]
Snapshot = Callable[[Conn, str], Awaitable[Any]]

MAX_PROPOSALS = 50
MAX_FACT_KEYS = 50
MAX_OBSERVATIONS = 30
MAX_REP_EVENTS = 500
MAX_CLAWS = 200
MAX_GRAPH_KMMS = 150
MAX_CLAM = 200  # nodes and triples the CLAM graph shows (newest first)


async def _rows(conn: Conn, query: str, args: tuple[object, ...] = ()) -> list[Any]:
    return await (await conn.execute(query, args)).fetchall()  # type: ignore[arg-type]


async def flow(conn: Conn, tenant: str) -> dict[str, Any]:
    """Envelopes per type (topic) with accepted/rejected counts and reason codes, plus pipeline lag."""
    rows = await _rows(conn, "SELECT coalesce(type, '?'), outcome, coalesce(reason_code, ''), count(*) "
                             "FROM audit.events GROUP BY 1, 2, 3")  # fmt: skip
    topics: dict[str, dict[str, Any]] = {}
    for typ, outcome, code, n in rows:
        t = topics.setdefault(typ, {"type": typ, "accepted": 0, "rejected": 0, "reasons": {}})
        if outcome == "ACCEPTED":
            t["accepted"] += n
        else:
            t["rejected"] += n
            t["reasons"][code or "?"] = t["reasons"].get(code or "?", 0) + n
    # Lag across processors (no tenant data): read at push time, it rides along with the flow.
    lag = await _rows(conn, "SELECT coalesce(sum(lag), 0)::bigint FROM hivemem.processor_progress")
    return {"at": int(time.time() * 1000), "topics": sorted(topics.values(), key=lambda t: t["type"]),
            "lag": int(lag[0][0])}  # fmt: skip


async def claws(conn: Conn, tenant: str) -> list[dict[str, Any]]:
    rows = await _rows(conn, "SELECT claw_id, status, healthy, ttl_seconds, last_seen, capabilities FROM claws.claws "
                             "ORDER BY claw_id LIMIT %s", (MAX_CLAWS,))  # fmt: skip
    now = int(time.time() * 1000)
    out = []
    for c, s, h, ttl, seen, caps in rows:
        left = (ttl or 30) * 1000 - (now - seen) if seen is not None else -1
        active = bool(s == "ACTIVE" and h and left >= 0)
        # Presence changes push again; going stale changes no row, so the page counts ``activeForMs`` down
        # on its own clock (no request) and greys the claw when it runs out.
        out.append({"clawId": c, "status": s, "healthy": h, "lastSeen": seen, "capabilities": list(caps or []),
                    "active": active, "activeForMs": max(0, left) if active else 0})  # fmt: skip
    return out


async def proposals(conn: Conn, tenant: str) -> list[dict[str, Any]]:
    """The latest proposals with their votes, decision (or refusal) and resulting fact version."""
    props = await _rows(conn, "SELECT proposal_id, fact_key, statement, proposer, deadline, base_version, log_time, "
                              "event_id FROM governance.proposals ORDER BY log_time DESC LIMIT %s",
                        (MAX_PROPOSALS,))  # fmt: skip
    ids = [p[0] for p in props]
    # As GET /api/v1/proposals/{id} reads them: governance refusals name the refused envelope's event id
    # (votes it accepted at the gate, then refused: DUPLICATE_VOTE, PROPOSAL_CLOSED, ...); gate refusals
    # carry the proposal id and have no vote row.
    votes = await _rows(conn, "SELECT v.proposal_id, v.claw_id, v.vote, v.log_time, r.reason_code "
                              "FROM governance.votes v LEFT JOIN governance.refusals r "
                              "ON r.envelope_event_id = v.event_id AND r.stage = 'governance' "
                              "WHERE v.proposal_id = ANY(%s) ORDER BY v.log_time, v.source", (ids,))  # fmt: skip
    by_gate = await _rows(conn, "SELECT proposal_id, claw_id, reason_code FROM governance.refusals "
                                "WHERE proposal_id = ANY(%s) AND type = 'vote' AND stage <> 'governance' "
                                "ORDER BY log_time", (ids,))  # fmt: skip
    refused = await _rows(conn, "SELECT p.proposal_id, r.reason_code FROM governance.proposals p "
                                "JOIN governance.refusals r ON r.envelope_event_id = p.event_id "
                                "AND r.type = 'proposal' AND r.stage = 'governance' "
                                "WHERE p.proposal_id = ANY(%s)", (ids,))  # fmt: skip
    decisions = await _rows(conn, "SELECT proposal_id, outcome, yes_votes, no_votes, quorum_basis, threshold, "
                                  "decided_at FROM governance.decisions WHERE proposal_id = ANY(%s)",
                            (ids,))  # fmt: skip
    facts = await _rows(conn, "SELECT proposal_id, version FROM governance.facts WHERE proposal_id = ANY(%s)", (ids,))
    by_id: dict[str, dict[str, Any]] = {}
    for pid, key, statement, proposer, deadline, base, at, _ in props:
        by_id[pid] = {"proposalId": pid, "factKey": key, "statement": statement, "proposer": proposer,
                      "deadline": deadline, "baseVersion": base, "at": at, "status": "OPEN", "votes": [],
                      "refusedVotes": [], "decision": None, "refusal": None, "factVersion": None}  # fmt: skip
    for pid, claw, vote, at, code in votes:
        by_id[pid]["votes"].append({"clawId": claw, "vote": vote, "at": at, "refusal": code})
    for pid, claw, code in by_gate:
        by_id[pid]["refusedVotes"].append({"clawId": claw or "?", "reasonCode": code})
    for pid, code in refused:
        by_id[pid]["status"] = "REFUSED"
        by_id[pid]["refusal"] = code
    for pid, outcome, yes, no, basis, threshold, decided_at in decisions:
        by_id[pid]["status"] = outcome
        by_id[pid]["decision"] = {"outcome": outcome, "yes": yes, "no": no, "quorumBasis": basis,
                                  "threshold": threshold, "decidedAt": decided_at}  # fmt: skip
    for pid, version in facts:
        by_id[pid]["factVersion"] = version
    return [by_id[p] for p in ids]


async def facts(conn: Conn, tenant: str) -> list[dict[str, Any]]:
    """Version chains of the most recently changed fact keys, each oldest version first."""
    rows = await _rows(conn, """
        WITH recent AS (SELECT fact_key, max(valid_from) AS at FROM governance.facts GROUP BY fact_key
                        ORDER BY at DESC LIMIT %s)
        SELECT f.fact_key, f.version, f.statement, f.valid_from, f.valid_to, f.proposal_id, f.supersedes_version
        FROM governance.facts f JOIN recent r USING (fact_key) ORDER BY r.at DESC, f.fact_key, f.version""",
                           (MAX_FACT_KEYS,))  # fmt: skip
    chains: dict[str, list[dict[str, Any]]] = {}
    for key, version, statement, valid_from, valid_to, pid, supersedes in rows:
        chains.setdefault(key, []).append({
            "version": version, "statement": statement, "validFrom": valid_from, "validTo": valid_to,
            "proposalId": pid, "supersedes": supersedes})  # fmt: skip
    return [{"factKey": k, "versions": v} for k, v in chains.items()]


async def reputation(conn: Conn, tenant: str) -> dict[str, Any]:
    """Current CAML scores of the tenant's claws and their recent history (for the plot)."""
    scores = await _rows(conn, "SELECT claw_id, score, at FROM caml.caml_reputation WHERE tenant = %s "
                               "ORDER BY claw_id LIMIT %s", (tenant, MAX_CLAWS))  # fmt: skip
    history = await _rows(conn, """SELECT claw_id, at, score, reason FROM (
        SELECT claw_id, at, score, reason, seq FROM caml.caml_rep_events WHERE tenant = %s
        ORDER BY at DESC, seq DESC LIMIT %s) h ORDER BY at, seq""", (tenant, MAX_REP_EVENTS))  # fmt: skip
    return {"scores": [{"clawId": c, "score": s, "at": at} for c, s, at in scores],
            "history": [{"clawId": c, "at": at, "score": s, "reason": r} for c, at, s, r in history]}  # fmt: skip


async def observations(conn: Conn, tenant: str) -> list[dict[str, Any]]:
    """The tenant's own recent CAML observations (the pool is shared; its authors' tenants are not shown)."""
    rows = await _rows(conn, "SELECT observation_id, claw_id, observation_type, domain, summary, confidence, "
                             "validations, refutations, active, created_at FROM caml.caml_observations "
                             "WHERE tenant = %s ORDER BY created_at DESC LIMIT %s",
                       (tenant, MAX_OBSERVATIONS))  # fmt: skip
    return [{"observationId": o, "clawId": c, "type": t, "domain": d, "summary": s, "confidence": conf,
             "validations": v, "refutations": r, "active": a, "at": at}
            for o, c, t, d, s, conf, v, r, a, at in rows]  # fmt: skip


async def kmms(conn: Conn, tenant: str) -> dict[str, Any]:
    """Per claw: L4 episodes and the current L3 summaries, L2 facts and L1 abstractions (counts)."""
    episodes = await _rows(conn, "SELECT claw_id, count(*) FROM kmms.kmms_episodes WHERE NOT erased "
                                 "GROUP BY claw_id ORDER BY claw_id LIMIT %s", (MAX_CLAWS,))  # fmt: skip
    nodes = await _rows(conn, "SELECT claw_id, layer, count(*) FROM kmms.kmms_nodes WHERE status = 'CURRENT' "
                              "GROUP BY claw_id, layer")  # fmt: skip
    out: dict[str, dict[str, int]] = {}
    for claw, n in episodes:
        out.setdefault(claw, {"L4": 0, "L3": 0, "L2": 0, "L1": 0})["L4"] = n
    for claw, layer, n in nodes:
        if 1 <= layer <= 3:
            out.setdefault(claw, {"L4": 0, "L3": 0, "L2": 0, "L1": 0})[f"L{layer}"] = n
    return {"claws": [{"clawId": c, "layers": layers} for c, layers in sorted(out.items())]}


async def graph(conn: Conn, tenant: str) -> dict[str, Any]:
    """Claws, proposals, facts and KMMS entities as one graph: who proposed and voted what, which
    proposal published which fact version, which claw remembers which entity (current L1/L2 nodes)."""
    nodes: dict[str, dict[str, Any]] = {}
    edges: list[dict[str, Any]] = []

    def node(nid: str, label: str, group: str) -> str:
        nodes.setdefault(nid, {"id": nid, "label": label[:60], "group": group})
        return nid

    for (claw,) in await _rows(conn, "SELECT claw_id FROM claws.claws ORDER BY claw_id LIMIT %s", (MAX_CLAWS,)):
        node(f"claw:{claw}", claw, "claw")
    props = await _rows(conn, "SELECT proposal_id, proposer FROM governance.proposals ORDER BY log_time DESC "
                              "LIMIT %s", (MAX_PROPOSALS,))  # fmt: skip
    for pid, proposer in props:
        edges.append({"from": node(f"claw:{proposer}", proposer, "claw"),
                      "to": node(f"proposal:{pid}", pid, "proposal"), "label": "proposes"})  # fmt: skip
    ids = [p[0] for p in props]
    for pid, claw, vote in await _rows(conn, "SELECT proposal_id, claw_id, vote FROM governance.votes "
                                             "WHERE proposal_id = ANY(%s)", (ids,)):  # fmt: skip
        edges.append({"from": node(f"claw:{claw}", claw, "claw"), "to": f"proposal:{pid}", "label": vote,
                      "dashes": True})  # fmt: skip
    for pid, key, version in await _rows(conn, "SELECT proposal_id, fact_key, version FROM governance.facts "
                                                "WHERE proposal_id = ANY(%s)", (ids,)):  # fmt: skip
        edges.append({"from": f"proposal:{pid}", "to": node(f"fact:{key}", key, "fact"), "label": f"v{version}"})
    for claw, entity, n in await _rows(conn, "SELECT claw_id, entity, count(*) FROM kmms.kmms_nodes "
                                             "WHERE status = 'CURRENT' AND layer IN (1, 2) GROUP BY 1, 2 "
                                             "ORDER BY 3 DESC LIMIT %s", (MAX_GRAPH_KMMS,)):  # fmt: skip
        edges.append({"from": node(f"claw:{claw}", claw, "claw"), "to": node(f"entity:{entity}", entity, "entity"),
                      "label": str(n)})  # fmt: skip
    return {"nodes": list(nodes.values()), "edges": edges}


async def clam(conn: Conn, tenant: str) -> dict[str, Any]:
    """CLAM's minds: short-term nodes (volatile), long-term nodes (semantic, episodic) and triples, with
    the counts the seed's bifurcated counters show (they equal the stores' row counts)."""
    stm = await _rows(conn, "SELECT claw_id, concept_id, description, confidence_score FROM clam.stm "
                            "ORDER BY creation_timestamp DESC LIMIT %s", (MAX_CLAM,))  # fmt: skip
    ltm = await _rows(conn, "SELECT claw_id, concept_id, description, collection FROM clam.ltm "
                            "ORDER BY stored_at DESC LIMIT %s", (MAX_CLAM,))  # fmt: skip
    triples = await _rows(conn, "SELECT claw_id, subject, predicate, object FROM clam.triples "
                                "ORDER BY known_at DESC LIMIT %s", (MAX_CLAM,))  # fmt: skip
    counts = await _rows(conn, "SELECT (SELECT count(*) FROM clam.stm), (SELECT count(*) FROM clam.ltm WHERE "
                               "collection = 'semantic'), (SELECT count(*) FROM clam.ltm WHERE collection = "
                               "'episodic'), (SELECT count(*) FROM clam.triples)", ())  # fmt: skip
    v, sem, epi, tri = counts[0]
    nodes = [{"id": cid, "label": f"{d} ({score})", "group": "volatile", "clawId": claw} for claw, cid, d, score in stm]
    nodes += [{"id": cid, "label": d, "group": col, "clawId": claw} for claw, cid, d, col in ltm]
    return {
        "counts": {"volatile": v, "semantic": sem, "episodic": epi, "triples": tri},
        "nodes": nodes,
        "triples": [{"clawId": c, "subject": s, "predicate": p, "object": o} for c, s, p, o in triples],
    }


# Area -> snapshot.
SNAPSHOTS: dict[str, Snapshot] = {
    "flow": flow,
    "claws": claws,
    "proposals": proposals,
    "facts": facts,
    "reputation": reputation,
    "observations": observations,
    "kmms": kmms,
    "graph": graph,
    "clam": clam,
}


async def snapshot(pool: AsyncConnectionPool, tenant: str, area: str) -> Any:
    """The area's state as the tenant may see it (one transaction bound to the tenant)."""
    async with tenant_tx(pool, tenant) as conn:
        return await SNAPSHOTS[area](conn, tenant)
