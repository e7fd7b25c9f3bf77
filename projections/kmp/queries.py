"""KMP reads over the ``kmp`` read model: load what an about held as known at a time, then answer
(wake, ask, goto/near/rewind/forward, trace, inspect) with ``projections/kmp/views.py``.

Every read filters on ``known_at`` (the log time HiveMem learnt a row, X-26), so nothing written
after the question's time is ever a candidate: 0 future leaks by construction, checked by a
property test. Every read runs in a tenant transaction under row-level security: ``ALL_ABOUTS``
means all abouts of the caller's tenant, never another's.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Literal

from psycopg_pool import AsyncConnectionPool

from governance.kmp.confidence import ProofFacts, confidence
from governance.kmp.scope import ResolvedScope
from projections.kmp.views import (
    EntryRow,
    EntryView,
    EvidenceView,
    RelationView,
    Snapshot,
    View,
    conflicts_among,
    summary,
)
from projections.queries import tenant_tx
from projections.verdicts import Refused, poll_verdict, row_or_refusal

NOW = 2**62  # "everything logged so far", for internal reads; answers echo a real instant (known_now)
Policy = Literal["EVIDENCE_OR_UNKNOWN", "SHOW_CONFLICTS", "BEST_EFFORT"]
_ENTRY = "about, entry_id, kind, text, occurred_at, known_at, seq, dims, source_agent"


def _entry(row: Any) -> EntryRow:
    a, ref, kind, text, occ, known, seq, dims, agent = row
    return EntryRow(str(a), str(ref), str(kind), str(text), int(occ), int(known), int(seq), tuple(dims), str(agent))


def _relation(row: Any) -> RelationView:
    a, src, dst, rel, cls, why, ev, quality, known = row
    return RelationView(about=a, source_ref=src, target_ref=dst, rel=rel, semantic_class=cls, why=why,
                        evidence_refs=list(ev), quality=quality, known_at=int(known))  # fmt: skip


def _evidence(row: Any) -> EvidenceView:
    a, ref, text, supports, source, known = row
    return EvidenceView(ref=ref, about=a, text=text, supports=list(supports), source=source, known_at=int(known))


async def known_now(pool: AsyncConnectionPool, tenant: str) -> int:
    """A read's ``knownAt`` when the caller gives none: now (ms), or the newest log time already folded
    if the broker's clock runs ahead of ours, so the read sees every write folded so far and the
    echoed value repeats it."""
    async with tenant_tx(pool, tenant) as conn:
        row = await (await conn.execute("SELECT max(known_at) FROM kmp.kmp_ingests WHERE tenant = %s",
                                        (tenant,))).fetchone()  # fmt: skip
    latest = int(str(row[0])) if row is not None and row[0] is not None else 0
    return max(int(time.time() * 1000), latest)


async def snapshot(pool: AsyncConnectionPool, tenant: str, about: str, known_at: int,
                   dimensions: list[str] | None = None) -> Snapshot:  # fmt: skip
    """Everything the about held at ``known_at`` (entries optionally limited to some dimensions)."""
    dim_sql = " AND dims && %(d)s" if dimensions else ""
    p = {"t": tenant, "a": about, "k": known_at, "d": dimensions or []}
    async with tenant_tx(pool, tenant) as conn:
        entries = await (await conn.execute(
            f"SELECT {_ENTRY} FROM kmp.kmp_entries WHERE tenant = %(t)s AND about = %(a)s AND known_at <= %(k)s"
            f"{dim_sql} ORDER BY occurred_at, known_at, seq", p)).fetchall()  # fmt: skip
        rels = await (await conn.execute(
            "SELECT about, source_ref, target_ref, rel, semantic_class, why, evidence_refs, quality, known_at "
            "FROM kmp.kmp_relations WHERE tenant = %(t)s AND about = %(a)s AND known_at <= %(k)s ORDER BY seq",
            p)).fetchall()  # fmt: skip
        evidence = await (await conn.execute(
            "SELECT about, evidence_id, text, supports, source, known_at FROM kmp.kmp_evidence "
            "WHERE tenant = %(t)s AND about = %(a)s AND known_at <= %(k)s ORDER BY seq", p)).fetchall()  # fmt: skip
    return Snapshot(about, known_at, [_entry(r) for r in entries], [_relation(r) for r in rels],
                    [_evidence(r) for r in evidence])  # fmt: skip


class Because(View):
    claim: str
    ref: str
    about: str


class Superseded(View):
    ref: str
    superseded_by: str
    why: str


class Proof(View):
    path: list[RelationView]
    evidence: list[EvidenceView]
    conflicts: list[RelationView]
    missing: list[str]  # matched refs with no evidence
    confidence: Literal["HIGH", "MEDIUM", "LOW", "UNKNOWN"]
    superseded: list[Superseded]
    frontier_size: int


class ScopeView(View):
    mode: str
    abouts: list[str] | None
    is_global: bool


class AskResult(View):
    answer: str | None  # the best-supported entry's text: answer material, never a generated answer
    answer_ref: str | None
    because: list[Because]
    proof: Proof
    scope: ScopeView
    known_at: int
    took_ms: float
    warnings: list[str]


async def _candidates(pool: AsyncConnectionPool, tenant: str, scope: ResolvedScope, question: str,
                      known_at: int, limit: int) -> list[EntryRow]:  # fmt: skip
    about_sql = "" if scope.abouts is None else " AND about = ANY(%(abouts)s)"
    p = {"t": tenant, "q": question, "k": known_at, "n": limit, "abouts": list(scope.abouts or ())}
    async with tenant_tx(pool, tenant) as conn:
        # Any of the question's words (websearch syntax joins with AND; OR them for recall, rank by cover).
        rows = await (await conn.execute(
            f"WITH qq AS (SELECT replace(websearch_to_tsquery('english', %(q)s)::text, '&', '|')::tsquery AS q) "
            f"SELECT {_ENTRY} FROM kmp.kmp_entries e, qq WHERE tenant = %(t)s AND known_at <= %(k)s{about_sql} "
            f"AND qq.q::text <> '' AND e.tsv @@ qq.q ORDER BY ts_rank_cd(e.tsv, qq.q, 32) DESC, e.known_at DESC, "
            f"e.entry_id LIMIT %(n)s", p)).fetchall()  # fmt: skip
    return [_entry(r) for r in rows]


async def ask(pool: AsyncConnectionPool, tenant: str, scope: ResolvedScope, question: str, policy: Policy,
              known_at: int, limit: int) -> AskResult:  # fmt: skip
    """Answer material with evidence: matching entries (full text, inside the scope, known at
    ``known_at``), preferring ones nothing superseded and that carry evidence; the relations and
    evidence around them; conflicts; what lacks proof; a confidence that is UNKNOWN rather than a guess."""
    t0 = time.perf_counter()
    found = await _candidates(pool, tenant, scope, question, known_at, limit * 4)
    abouts = sorted({e.about for e in found})
    snaps = {a: s for a, s in zip(abouts, await asyncio.gather(*(snapshot(pool, tenant, a, known_at)
                                                                   for a in abouts)), strict=True)}  # fmt: skip
    scored = []
    for rank, e in enumerate(found):
        s = snaps[e.about]
        gone = e.ref in s.superseded()
        ev = s.evidence_of(e.ref)
        scored.append((gone, not ev, rank, e, ev))
    scored.sort(key=lambda x: (x[0], x[1], x[2]))
    top = scored[:limit]
    path: list[RelationView] = []
    evidence: dict[tuple[str, str], EvidenceView] = {}
    conflicts: list[RelationView] = []
    superseded: list[Superseded] = []
    for gone, _, _, e, ev in top:
        s = snaps[e.about]
        path += [r for r in s.relations if e.ref in (r.source_ref, r.target_ref) and r not in path]
        evidence.update({(v.about, v.ref): v for v in ev})
        conflicts += [r for r in conflicts_among(s, [e.ref]) if r not in conflicts]
        if gone:
            by = s.superseded()[e.ref]
            superseded.append(Superseded(ref=e.ref, superseded_by=by.source_ref, why=by.why))
    missing = [e.ref for _, no_ev, _, e, _ in top if no_ev]
    facts = ProofFacts(matched=len(top), with_evidence=len(top) - len(missing),
                       rich_links=sum(1 for r in path if r.quality == "RICH"), conflicts=len(conflicts),
                       missing=len(missing), superseded_only=bool(top) and all(x[0] for x in top))  # fmt: skip
    conf = confidence(facts, policy)
    best = top[0][3] if top and conf != "UNKNOWN" else None
    warnings = []
    if not found:
        warnings.append("NO_MATCH: nothing in scope matches the question at known_at")
    elif conf == "UNKNOWN":
        warnings.append("NO_EVIDENCE: matches exist but none carries evidence (policy EVIDENCE_OR_UNKNOWN)")
    if scope.is_global:
        warnings.append("GLOBAL_SCOPE: ALL_ABOUTS read every about of the tenant")
    return AskResult(
        answer=best.text if best else None, answer_ref=best.ref if best else None,
        because=[Because(claim=summary(e.text), ref=e.ref, about=e.about) for _, _, _, e, _ in top],
        proof=Proof(path=path, evidence=list(evidence.values()), conflicts=conflicts if policy != "BEST_EFFORT"
                    or conflicts else [], missing=missing, confidence=conf, superseded=superseded,
                    frontier_size=len(found)),
        scope=ScopeView(mode=scope.mode, abouts=list(scope.abouts) if scope.abouts is not None else None,
                        is_global=scope.is_global),
        known_at=known_at, took_ms=round((time.perf_counter() - t0) * 1000, 2), warnings=warnings,
    )  # fmt: skip


class Links(View):
    incoming: list[RelationView]
    outgoing: list[RelationView]


class Inspected(View):
    ref: str
    about: str
    kind: Literal["entry", "evidence"]
    entry: EntryView | None
    evidence_item: EvidenceView | None
    links: Links
    evidence: list[EvidenceView]
    raw: str | None  # only when include.raw: a summary read is not a raw read
    known_at: int


def inspect(s: Snapshot, ref: str, incoming: bool, outgoing: bool, with_evidence: bool,
            raw: bool) -> Inspected | None:  # fmt: skip
    entry = next((e for e in s.entries if e.ref == ref), None)
    item = next((v for v in s.evidence if v.ref == ref), None)
    if entry is None and item is None:
        return None
    links = Links(incoming=[r for r in s.relations if r.target_ref == ref] if incoming else [],
                  outgoing=[r for r in s.relations if r.source_ref == ref] if outgoing else [])  # fmt: skip
    text = entry.text if entry is not None else item.text if item is not None else ""
    return Inspected(ref=ref, about=s.about, kind="entry" if entry is not None else "evidence",
                     entry=s.entry_view(entry) if entry is not None else None, evidence_item=item, links=links,
                     evidence=s.evidence_of(ref) if with_evidence else [], raw=text if raw else None,
                     known_at=s.known_at)  # fmt: skip


def entries_in(s: Snapshot, idx: range) -> list[EntryView]:
    return [s.entry_view(s.entries[i]) for i in idx]


class IngestVerdict(View):
    outcome: Literal["INGESTED", "REFUSED"]
    known_at: int | None = None
    reason_code: str | None = None
    detail: str | None = None
    rich: int = 0
    anemic: int = 0
    structural: int = 0
    suspect: int = 0
    evidence_coverage: float = 1.0


async def ingest_verdict(pool: AsyncConnectionPool, tenant: str, event_id: str) -> IngestVerdict | None:
    row = await row_or_refusal(pool, tenant, event_id, "SELECT known_at, rich, anemic, structural, suspect, "
                               "evidence_coverage FROM kmp.kmp_ingests "
                               "WHERE tenant = %s AND envelope_event_id = %s")  # fmt: skip
    if isinstance(row, Refused):
        return IngestVerdict(outcome="REFUSED", reason_code=row.reason_code, detail=row.detail)
    if row is None:
        return None
    return IngestVerdict(outcome="INGESTED", known_at=int(str(row[0])), rich=int(str(row[1])), anemic=int(str(row[2])),
                         structural=int(str(row[3])), suspect=int(str(row[4])),
                         evidence_coverage=float(str(row[5])))  # fmt: skip


async def wait_ingest(pool: AsyncConnectionPool, tenant: str, event_id: str, wait_s: float) -> IngestVerdict | None:
    return await poll_verdict(ingest_verdict, pool, tenant, event_id, wait_s, first_delay=0.02, max_delay=0.02)


async def known_refs(pool: AsyncConnectionPool, tenant: str, about: str) -> tuple[set[str], set[str]]:
    """(entry/evidence/ingest refs, dimension ids) the read model holds for an about now: what a dry run
    and kernel_write_memory check against (the processor judges again, against the log's order)."""
    async with tenant_tx(pool, tenant) as conn:
        p = (tenant, about)
        refs = await (await conn.execute(
            "SELECT entry_id FROM kmp.kmp_entries WHERE tenant = %s AND about = %s UNION ALL "
            "SELECT evidence_id FROM kmp.kmp_evidence WHERE tenant = %s AND about = %s UNION ALL "
            "SELECT 'ingest:' || ingest_id FROM kmp.kmp_ingests WHERE tenant = %s AND about = %s",
            p + p + p)).fetchall()  # fmt: skip
        dims = await (await conn.execute("SELECT dimension_id FROM kmp.kmp_dimensions WHERE tenant = %s AND about = %s",
                                         p)).fetchall()  # fmt: skip
    return {str(r[0]) for r in refs}, {str(r[0]) for r in dims}
