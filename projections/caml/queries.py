"""Reads of the CAML read model: recall (eq. 1 ranking), verdicts, operators, transparency.

Recall takes the ``candidates`` nearest vectors of the configured model (an HNSW scan that
filters active, unexpired observations — and the domain, when given — in place), then ranks
them by the composite score of seed 000 eq. (1) (``governance.caml.recall_score``). What a
caller sees of another tenant's observation: kind, domain, summary, pattern, confidence,
counts, the author's score and a pseudonym — never the author's tenant, claw or evidence.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from contracts.caml_records import CamlAuditEntry
from contracts.caml_views import RecallHit
from governance.caml.merkle import inclusion_proof, root, verify_inclusion
from governance.caml.recall_score import score_parts
from projections.caml.read_model import ENTRY_COLUMNS, audit_leaf, entry_from_row
from projections.queries import tenant_tx
from projections.verdicts import poll_verdict

DAY_MS = 86_400_000


class View(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class Verdict(View):
    outcome: str  # ACCEPTED | REFUSED
    reason_code: str | None
    stage: str  # caml | gate
    audit_entry_id: str | None = None  # the CAML audit entry (for /caml/v1/transparency/proof)
    retry_after_ms: int | None = None
    reputation_at_write: float | None = None


class RepEvent(View):
    seq: int
    reason: str
    delta: float
    nominal_delta: float
    score: float
    observation_id: str | None
    at: int


class DeploymentView(View):
    claw_id: str
    reputation: float
    suspended: bool
    status_reason: str | None = None


class RootView(View):
    day: str
    scope: str
    size: int
    root: str


class ProofView(View):
    day: str
    entry_id: str
    entry: dict[str, Any]  # the entry itself: its canonical JSON is the leaf, so a client can recompute it
    leaf_index: int
    tree_size: int
    leaf_hash: str
    path: list[str]
    root: str
    verified: bool


def _any(rows: Any) -> Any:
    """Rows as psycopg returns them, for unpacking into typed views (the views validate)."""
    return rows


def pseudonym(key: bytes, tenant: str, claw: str) -> str:
    """Keyed (HMAC with a server secret): a guessed tenant and claw id cannot be confirmed."""
    return "dep-" + hmac.new(key, f"{tenant}/{claw}".encode(), hashlib.sha256).hexdigest()[:16]


async def recall(pool: AsyncConnectionPool, tenant: str, vector: list[float], model: str, *, k: int,
                 domain: str | None, kinds: list[str] | None, min_score: float, candidates: int,
                 pseudonym_key: bytes, now_ms: int | None = None) -> list[RecallHit]:  # fmt: skip
    now = int(time.time() * 1000) if now_ms is None else now_ms
    vec = "[" + ",".join(f"{x:.7g}" for x in vector) + "]"
    # The model id is a literal: the planner matches it to that model's partial HNSW index.
    model_lit = "'" + model.replace("'", "''") + "'"
    where = f"e.model = {model_lit} AND e.active AND e.expires_at >= %s"  # exactly max age: still in
    args: list[object] = [vec, now]
    if domain is not None:
        where += " AND e.domain = %s"
        args.append(domain)
    async with tenant_tx(pool, tenant) as conn:
        await conn.execute("SELECT set_config('hnsw.ef_search', '64', true), "
                           "set_config('hnsw.iterative_scan', 'relaxed_order', true)")  # fmt: skip
        cur = await conn.execute(
            f"""WITH near AS (
                    SELECT e.observation_id, 1 - (e.embedding <=> %s::vector) AS sim
                    FROM caml.caml_obs_embeddings e WHERE {where}
                    ORDER BY e.embedding <=> %s::vector LIMIT %s)
                SELECT o.observation_id, o.observation_type, o.domain, o.summary, o.pattern, o.confidence,
                       o.created_at, o.validations, o.refutations, coalesce(r.score, 0), near.sim, o.tenant,
                       o.claw_id, o.evidence
                FROM near JOIN caml.caml_observations o USING (observation_id)
                LEFT JOIN caml.caml_reputation r ON r.tenant = o.tenant AND r.claw_id = o.claw_id
                WHERE o.active""",
            (*args, vec, candidates),
        )
        rows = _any(await cur.fetchall())
    hits = []
    for oid, kind, dom, summary, pattern, conf, created, v, f, rep, sim, a_tenant, a_claw, evidence in rows:
        if kinds and kind not in kinds:
            continue
        age = max(0.0, (now - int(created)) / DAY_MS)
        parts = score_parts(float(sim), float(rep), int(v), int(f), age)
        if parts.total < min_score:
            continue
        own = a_tenant == tenant
        hits.append(RecallHit(observation_id=oid, observation_type=kind, domain=dom, summary=summary,
                              pattern=json.loads(pattern), confidence=conf, composite_score=round(parts.total, 6),
                              similarity=round(float(sim), 6), author_reputation=float(rep), validations=v,
                              refutations=f, age_days=round(age, 4), created_at=created,
                              author=pseudonym(pseudonym_key, a_tenant, a_claw), evidence_count=len(evidence), own=own,
                              evidence=list(evidence) if own else None))  # fmt: skip
    hits.sort(key=lambda h: (-h.composite_score, h.observation_id))
    return hits[:k]


async def verdict(pool: AsyncConnectionPool, tenant: str, event_id: str) -> Verdict | None:
    """The caml processor's verdict on an envelope, or the gate's refusal of it, if any yet."""
    async with tenant_tx(pool, tenant) as conn:
        cur = await conn.execute(
            "SELECT outcome, reason_code, retry_after_ms, reputation_at_write, entry_id FROM caml.caml_audit_log "
            "WHERE tenant = %s AND event_id = %s AND operation IN ('OBSERVE', 'VALIDATE') LIMIT 1",
            (tenant, event_id),
        )
        row = _any(await cur.fetchone())
        if row is not None:
            return Verdict(outcome=row[0], reason_code=row[1], stage="caml", retry_after_ms=row[2],
                           reputation_at_write=row[3], audit_entry_id=row[4])  # fmt: skip
        cur = await conn.execute(
            "SELECT reason_code, stage FROM audit.events WHERE tenant = %s AND event_id = %s AND outcome = 'REJECTED' "
            "AND (stage = 'gate' OR reason_code = 'PROCESSING_ERROR') LIMIT 1",
            (tenant, event_id),
        )
        row = _any(await cur.fetchone())  # the gate's refusals; the caml processor's PROCESSING_ERROR (no audit entry)
        return None if row is None else Verdict(outcome="REFUSED", reason_code=row[0], stage=row[1])


async def wait_verdict(pool: AsyncConnectionPool, tenant: str, event_id: str, wait_s: float) -> Verdict | None:
    return await poll_verdict(verdict, pool, tenant, event_id, wait_s)


async def deployments(pool: AsyncConnectionPool, tenant: str) -> list[DeploymentView]:
    async with tenant_tx(pool, tenant) as conn:
        cur = await conn.execute(
            """SELECT r.claw_id, r.score, coalesce(d.suspended, false), d.status_reason
               FROM caml.caml_reputation r LEFT JOIN caml.caml_deployments d USING (tenant, claw_id)
               WHERE r.tenant = %s ORDER BY r.claw_id""",
            (tenant,),
        )
        return [DeploymentView(claw_id=c, reputation=s, suspended=susp, status_reason=why)
                for c, s, susp, why in _any(await cur.fetchall())]  # fmt: skip


async def reputation_history(pool: AsyncConnectionPool, tenant: str, claw: str, limit: int) -> list[RepEvent]:
    async with tenant_tx(pool, tenant) as conn:
        cur = await conn.execute(
            "SELECT seq, reason, delta, nominal_delta, score, observation_id, at FROM caml.caml_rep_events "
            "WHERE tenant = %s AND claw_id = %s ORDER BY seq DESC LIMIT %s",
            (tenant, claw, limit),
        )
        return [RepEvent(seq=a, reason=b, delta=c, nominal_delta=d, score=e, observation_id=f, at=g)
                for a, b, c, d, e, f, g in _any(await cur.fetchall())]  # fmt: skip


async def writes_last_hour(pool: AsyncConnectionPool, tenant: str, now_ms: int) -> int:
    async with tenant_tx(pool, tenant) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM caml.caml_audit_log WHERE tenant = %s AND operation IN ('OBSERVE', 'VALIDATE') "
            "AND at > %s AND coalesce(reason_code, '') NOT IN ('REPUTATION_TOO_LOW', 'RATE_LIMITED', "
            "'SYSTEM_ONLY_TYPE', 'INSUFFICIENT_EVIDENCE', 'INVALID_PATTERN', 'CLAW_SUSPENDED', "
            "'DUPLICATE_OBSERVATION')",
            (tenant, now_ms - 3_600_000),
        )
        row = _any(await cur.fetchone())
        return int(row[0]) if row else 0


async def roots(pool: AsyncConnectionPool, tenant: str, day: str | None) -> list[RootView]:
    async with tenant_tx(pool, tenant) as conn:
        query = "SELECT DISTINCT ON (day, scope) day::text, scope, size, root FROM caml.caml_merkle_roots"
        args: tuple[object, ...] = ()
        if day is not None:
            query += " WHERE day = %s::date"
            args = (day,)
        cur = await conn.execute(query + " ORDER BY day DESC, scope, size DESC, computed_at DESC LIMIT 400", args)
        return [RootView(day=d, scope=s, size=n, root=r) for d, s, n, r in _any(await cur.fetchall())]


async def day_leaves(
    conn: AsyncConnection[tuple[object, ...]], tenant: str, day: str
) -> list[tuple[str, bytes, CamlAuditEntry]]:
    """(entry id, leaf hash) of a tenant's day, in log order: the leaves of its Merkle tree."""
    cur = await conn.execute(
        f"SELECT {ENTRY_COLUMNS} FROM caml.caml_audit_log WHERE tenant = %s AND day = %s::date "
        "ORDER BY log_time, log_topic, log_partition, log_offset",
        (tenant, day),
    )
    entries = [entry_from_row(tuple(row)) for row in await cur.fetchall()]
    return [(e.entry_id, audit_leaf(e), e) for e in entries]


async def proof(pool: AsyncConnectionPool, tenant: str, entry_id: str) -> ProofView | None:
    """An inclusion proof of one audit entry against its day's stored root (None: no entry or
    no root for its day yet)."""
    async with tenant_tx(pool, tenant) as conn:
        cur = await conn.execute(
            "SELECT day::text FROM caml.caml_audit_log WHERE tenant = %s AND entry_id = %s LIMIT 1",
            (tenant, entry_id),
        )
        row = _any(await cur.fetchone())
        if row is None:
            return None
        day = str(row[0])
        leaves = await day_leaves(conn, tenant, day)
        index = next(i for i, (e, _, _) in enumerate(leaves) if e == entry_id)
        # The largest root of that day that covers the entry (a checkpoint, or the day's final root).
        cur = await conn.execute(
            "SELECT root, size FROM caml.caml_merkle_roots WHERE day = %s::date AND scope = %s AND size > %s "
            "ORDER BY size DESC LIMIT 1",
            (day, tenant, index),
        )
        stored = _any(await cur.fetchone())
    if stored is None:
        return None
    size = int(str(stored[1]))
    hashes = [h for _, h, _ in leaves][:size]
    path = inclusion_proof(hashes, index)
    stored_root = bytes.fromhex(str(stored[0]))
    ok = verify_inclusion(hashes[index], index, size, path, stored_root) and root(hashes) == stored_root
    return ProofView(
        day=day,
        entry_id=entry_id,
        entry=leaves[index][2].to_wire(),
        leaf_index=index,
        tree_size=size,
        leaf_hash=hashes[index].hex(),
        path=[p.hex() for p in path],
        root=stored_root.hex(),
        verified=ok,
    )
