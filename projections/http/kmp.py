"""KMP over HTTP: ``/kmp/v1/*`` — ingest, write_memory, wake, ask, goto, near, rewind, forward,
trace, inspect (seed 001). Writes are ``kmp_ingest`` envelopes through the gate and the kmp
processor; reads answer as known at ``knownAt`` (log time, default now) and never mix abouts
unless the scope says so. The MCP kernel tools call these same routes.

No `from __future__ import annotations` here: FastAPI must see the real dependency types.
"""

import time
import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Response
from pydantic import Field, ValidationError

from contracts.models import KmpIngestPayload
from governance.kmp import cursors
from governance.kmp.diagnose import AnswerFacts, FailureClass, classify
from governance.kmp.ingest import IngestRefusal, KnownRefs, judge, split_ref
from governance.kmp.relations import RelationFacts, grade
from governance.kmp.scope import ScopeError, resolve_scope
from projections.auth import Principal
from projections.gate.gateway import EnvelopeIn, describe_validation, envelope_from_request
from projections.http.context import Ctx
from projections.http.errors import ApiError, error_responses
from projections.http.kmp_metrics import KmpMetrics
from projections.http.kmp_models import AskIn, DiagnoseIn, IngestIn, InspectIn, NavIn, TraceIn, WakeIn, WriteMemoryIn
from projections.kmp import queries as q
from projections.kmp.views import EntryView, NavError, Snapshot, TraceOut, View, Wake, move, trace, wake

_STATUS = {"DUPLICATE": 409, "REPLAYED": 409, "DUPLICATE_INGEST": 409, "DUPLICATE_REF": 409, "CLAW_SUSPENDED": 403}
WAIT_DOC = "how long to wait for the verdict (ms, at most 30000); without one in time: 202 PENDING"


class GradeOut(View):
    index: int
    rel: str
    quality: str
    reason: str


class IngestOut(View):
    status: Literal["INGESTED", "PENDING", "DRY_RUN"]
    about: str
    ingest_id: str
    event_id: str | None = None
    known_at: int | None = None  # read with knownAt >= this to see the write
    read_after_write_ready: bool = False
    accepted: dict[str, int] = Field(default_factory=dict)  # entries, relations, evidence
    quality: dict[str, float] = Field(default_factory=dict)  # rich, anemic, structural, suspect, evidenceCoverage
    grades: list[GradeOut] = Field(default_factory=list)  # dry run: each relation's grade
    consistency_token: str | None = None


class WriteOut(View):
    entry_id: str
    fallbacks: list[str]  # connections written as anemic 'follows' instead, with why
    compiled: dict[str, Any]  # the ingest it compiled to (wire form)
    result: IngestOut


class Diagnosis(View):
    failure: FailureClass
    lost: list[str]  # the expected refs lost at that stage
    logged: list[str]  # expected refs the about holds now
    projected: list[str]  # ... and held at knownAt
    retrieved: list[str]  # ... returned by ask
    proven: list[str]  # ... returned with evidence
    used: list[str]  # ... cited by the reader
    ask: q.AskResult


class Page(View):
    returned: int
    total: int
    has_more: bool
    next_cursor: str | None


class NavOut(View):
    about: str
    known_at: int
    direction: str
    resolved: EntryView | None  # the entry the cursor landed on
    entries: list[EntryView]
    page: Page
    warnings: list[str]


def _validated(payload: dict[str, Any]) -> KmpIngestPayload:
    try:
        return KmpIngestPayload.model_validate(payload)
    except ValidationError as exc:  # the HTTP models mirror the wire's limits; this is the last word
        raise ApiError(422, "INVALID_FIELD", describe_validation(exc.errors())) from exc


def _now_ms() -> int:
    return int(time.time() * 1000)


def router(ctx: Ctx) -> APIRouter:
    r = APIRouter(tags=["process memory (KMP)"])
    Who = Annotated[Principal, Depends(ctx.principal)]
    Wait = Annotated[int, Query(alias="waitMs", ge=0, le=30_000, description=WAIT_DOC)]
    deps = ctx.deps
    metrics = KmpMetrics(ctx.metrics)

    async def known(who: Principal, k: int | None) -> int:
        return k if k is not None else await q.known_now(ctx.pool, who.tenant)

    async def publish(who: Principal, payload: dict[str, Any], key: str | None, wait_ms: int,
                      response: Response) -> IngestOut:  # fmt: skip
        started = time.perf_counter()
        env = envelope_from_request(EnvelopeIn(type="kmp_ingest", payload=payload, idempotency_key=key), who,
                                    deps.tenants)  # fmt: skip
        pos = await ctx.publish(env)
        out = IngestOut(status="PENDING", about=payload["about"], ingest_id=payload["ingestId"], event_id=env.event_id,
                        consistency_token=str(pos))  # fmt: skip
        found = await q.wait_ingest(ctx.pool, who.tenant, env.event_id, wait_ms / 1000) if wait_ms else None
        if found is None:
            metrics.record("ingest", who.tenant, payload["about"], started, outcome="PENDING")
            response.status_code = 202
            return out
        metrics.queryable.observe(time.perf_counter() - started)
        if found.outcome != "INGESTED":
            code = found.reason_code or "REFUSED"
            metrics.record("ingest", who.tenant, payload["about"], started, outcome=code)
            raise ApiError(_STATUS.get(code, 422), code, found.detail or f"refused: {code}")
        for quality, n in (("RICH", found.rich), ("ANEMIC", found.anemic), ("STRUCTURAL", found.structural),
                           ("SUSPECT", found.suspect)):  # fmt: skip
            metrics.relations.labels(quality).inc(n)
        metrics.record("ingest", who.tenant, payload["about"], started, refs=len(payload["entries"]),
                       rich=found.rich, anemic=found.anemic, structural=found.structural, suspect=found.suspect,
                       evidenceCoverage=found.evidence_coverage)  # fmt: skip
        return out.model_copy(update={
            "status": "INGESTED", "known_at": found.known_at, "read_after_write_ready": True,
            "accepted": {"entries": len(payload["entries"]), "relations": len(payload["relations"]),
                         "evidence": len(payload["evidence"])},
            "quality": {"rich": found.rich, "anemic": found.anemic, "structural": found.structural,
                        "suspect": found.suspect, "evidenceCoverage": found.evidence_coverage}})  # fmt: skip

    @r.post("/kmp/v1/ingest", response_model=IngestOut, response_model_by_alias=True,
            responses={202: {"description": "published; not judged within waitMs"},
                       **error_responses(400, 401, 403, 409, 413, 422, 503,
                                         _422="REJECTED_RELATION, UNKNOWN_DIMENSION, UNKNOWN_REF, EMPTY_INGEST, "
                                         "INVALID_VALIDITY, INVALID_FIELD",
                                         _409="DUPLICATE_REF, DUPLICATE_INGEST")})  # fmt: skip
    async def ingest(who: Who, body: IngestIn, response: Response, wait_ms: Wait = 5_000) -> IngestOut:
        """kernel_ingest: the strict write of already-structured memory (dimensions, entries, relations,
        evidence). One verdict: refused whole with a reason code, or ingested with each relation graded."""
        data = body.model_dump(by_alias=True, exclude={"idempotency_key", "dry_run"})
        data["ingestId"] = body.ingest_id or f"in-{uuid.uuid4()}"
        payload = _validated(data)
        if body.dry_run:
            refs, dims = await q.known_refs(ctx.pool, who.tenant, body.about)
            verdict = judge(payload, KnownRefs(refs, dims))
            if isinstance(verdict, IngestRefusal):
                raise ApiError(_STATUS.get(verdict.code, 422), verdict.code, verdict.detail)
            return IngestOut(status="DRY_RUN", about=body.about, ingest_id=payload.ingest_id,
                             grades=[GradeOut(index=i, rel=rel.rel, quality=g.quality, reason=g.reason)
                                     for i, (rel, g) in enumerate(zip(payload.relations, verdict.grades,
                                                                      strict=True))])  # fmt: skip
        return await publish(who, payload.to_wire(), body.idempotency_key, wait_ms, response)

    @r.post("/kmp/v1/write-memory", response_model=WriteOut, response_model_by_alias=True,
            responses={202: {"description": "published; not judged within waitMs"},
                       **error_responses(400, 401, 403, 409, 413, 422, 503,
                                         _422="REJECTED_RELATION, SUSPECT_RELATION (fallback REJECT), "
                                         "INVALID_FIELD")})  # fmt: skip
    async def write_memory(who: Who, body: WriteMemoryIn, response: Response, wait_ms: Wait = 5_000) -> WriteOut:
        """kernel_write_memory: one entry and its connections, checked (relation, class, target, why,
        evidence, context read) and compiled to an ingest. A connection that would be SUSPECT falls back
        to an anemic 'follows' (fallback ANEMIC, said in `fallbacks`) or is refused (REJECT)."""
        refs, dims = await q.known_refs(ctx.pool, who.tenant, body.about)
        entry_id = body.entry_id or f"e-{uuid.uuid4().hex[:12]}"
        ev_ids = [v.id or f"ev-{uuid.uuid4().hex[:12]}" for v in body.evidence]
        cite = {f"#{i}": x for i, x in enumerate(ev_ids)}
        all_refs = refs | {entry_id, *ev_ids}
        relations, fallbacks = [], []
        for i, c in enumerate(body.connections):
            evidence_refs = [cite.get(x, x) for x in c.evidence]
            other, target = split_ref(c.target, body.about)
            facts = RelationFacts(
                rel=c.rel, semantic_class=c.semantic_class, why=c.why.strip(), evidence_refs=tuple(evidence_refs),
                source_known=True, target_known=other is not None or target in all_refs, target_about=other,
                evidence_known=all(x in all_refs for x in evidence_refs),
                target_in_context=target in body.context_refs, self_loop=target == entry_id)  # fmt: skip
            g = grade(facts)
            rel = {"sourceRef": entry_id, "targetRef": c.target, "rel": c.rel, "semanticClass": c.semantic_class,
                   "why": c.why, "evidenceRefs": evidence_refs}  # fmt: skip
            if g.quality == "REJECTED":
                raise ApiError(422, "REJECTED_RELATION", f"connections[{i}]: {g.reason}")
            if g.quality == "SUSPECT":
                if body.fallback == "REJECT":
                    raise ApiError(422, "SUSPECT_RELATION", f"connections[{i}]: {g.reason}")
                fallbacks.append(f"connection {i}: {c.rel} -> follows ({g.reason})")
                rel = {**rel, "rel": "follows", "semanticClass": "PROCEDURAL",
                       "why": f"related by order; {c.rel} not justified: {g.reason}"}  # fmt: skip
            relations.append(rel)
        new_dims = [d for d in dict.fromkeys(body.dimensions) if d not in dims]
        payload = {
            "ingestId": f"wm-{uuid.uuid4()}", "about": body.about,
            "dimensions": [{"id": d, "kind": d.split(":", 1)[0] if ":" in d else "dimension", "title": ""}
                           for d in new_dims],
            "entries": [{"id": entry_id, "kind": body.kind, "text": body.text,
                         "occurredAt": body.occurred_at if body.occurred_at is not None else _now_ms(),
                         "coordinates": [{"dimension": d, "sequence": 0} for d in dict.fromkeys(body.dimensions)]}],
            "relations": relations,
            "evidence": [{"id": x, "text": v.text, "supports": [entry_id], "source": v.source}
                         for x, v in zip(ev_ids, body.evidence, strict=True)],
            "provenance": {"sourceKind": "AGENT", "sourceAgent": body.source_agent or (who.claw_id or "")},
            "contextRefs": body.context_refs,
        }  # fmt: skip
        wire = _validated(payload).to_wire()
        result = await publish(who, wire, body.idempotency_key, wait_ms, response)
        return WriteOut(entry_id=entry_id, fallbacks=fallbacks, compiled=wire, result=result)

    @r.post("/kmp/v1/wake", response_model=Wake, response_model_by_alias=True,
            responses=error_responses(400, 401, 403, 422))  # fmt: skip
    async def wake_route(who: Who, body: WakeIn) -> Wake:
        """The minimal state to continue: objective, current state, causal spine with evidence refs,
        open loops, next actions, guardrails, and a cursor to resume reading from."""
        started = time.perf_counter()
        s = await q.snapshot(ctx.pool, who.tenant, body.about, await known(who, body.known_at), body.dimensions)
        last = s.entries[-1].key if s.entries else None
        out = wake(s, body.max_entries, cursors.encode_cursor(last, "forward") if last else None)
        metrics.record("wake", who.tenant, body.about, started, refs=len(out.current_state) + len(out.causal_spine))
        return out

    @r.post("/kmp/v1/ask", response_model=q.AskResult, response_model_by_alias=True,
            responses=error_responses(400, 401, 403, 422,
                                      _422="ABOUT_REQUIRED, ABOUTS_REQUIRED, INVALID_SCOPE, TOO_MANY_ABOUTS, "
                                      "INVALID_FIELD"))  # fmt: skip
    async def ask(who: Who, body: AskIn) -> q.AskResult:
        """Answer material with evidence, conflicts, missing pieces and a confidence: UNKNOWN when the
        evidence is not there, never a guess. Scope CURRENT_ABOUT (default), ABOUTS (list required) or
        ALL_ABOUTS (every about of your tenant; logged as a global read)."""
        started = time.perf_counter()
        try:
            scope = resolve_scope(body.scope.mode, body.about, body.scope.abouts)
        except ScopeError as exc:
            metrics.record("ask", who.tenant, body.about, started, scope=body.scope.mode, outcome=exc.code)
            raise ApiError(422, exc.code, exc.detail) from exc
        at = await known(who, body.known_at)
        res = await q.ask(ctx.pool, who.tenant, scope, body.question, body.answer_policy, at, body.limit)
        metrics.answers.labels(res.proof.confidence).inc()
        metrics.record("ask", who.tenant, body.about, started, scope=scope.mode, refs=len(res.because),
                       confidence=res.proof.confidence, evidence=len(res.proof.evidence),
                       missing=len(res.proof.missing), claw=who.claw_id)  # fmt: skip
        return res

    async def navigate(who: Principal, body: NavIn, op: str) -> NavOut:
        started = time.perf_counter()
        out = await navigate_(who, body, op)
        metrics.record(op, who.tenant, body.about, started, refs=out.page.returned, hasMore=out.page.has_more)
        return out

    async def navigate_(who: Principal, body: NavIn, op: str) -> NavOut:
        s = await q.snapshot(ctx.pool, who.tenant, body.about, await known(who, body.known_at), body.dimensions)
        c = body.cursor
        try:
            m = move(s, op, c.ref, c.time, c.token, body.window.before, body.window.after, body.limit)
        except NavError as exc:
            raise ApiError(exc.status, exc.code, exc.detail) from exc
        resolved = s.entry_view(s.entries[m.landed]) if m.landed is not None else None
        warnings = [] if s.entries else ["NO_MEMORY: nothing was known about this about at knownAt"]
        return NavOut(about=body.about, known_at=s.known_at, direction=m.direction, resolved=resolved,
                      entries=q.entries_in(s, m.indices),
                      page=Page(returned=len(m.indices), total=len(s.entries), has_more=m.has_more,
                                next_cursor=m.next_cursor), warnings=warnings)  # fmt: skip

    nav_doc = {
        "goto": "Move to a moment or a reference: the entry the cursor lands on (ref, time or token).",
        "near": "What happened around a moment or reference: `window.before` entries before, `window.after` after.",
        "rewind": "Move backward: up to `limit` entries before the cursor (or the end); page with nextCursor.",
        "forward": "Move forward: up to `limit` entries after the cursor (or the start); page with nextCursor.",
    }
    for op, doc in nav_doc.items():

        def make(op: str) -> Any:
            async def handler(who: Who, body: NavIn) -> NavOut:
                return await navigate(who, body, op)

            handler.__doc__ = nav_doc[op]
            handler.__name__ = f"kmp_{op}"
            return handler

        r.post(f"/kmp/v1/{op}", response_model=NavOut, response_model_by_alias=True, summary=f"KMP {op}",
               responses=error_responses(400, 401, 403, 404, 422,
                                         _422="CURSOR_REQUIRED, INVALID_CURSOR, INVALID_FIELD"))(make(op))  # fmt: skip
        del doc

    @r.post("/kmp/v1/trace", response_model=TraceOut, response_model_by_alias=True,
            responses=error_responses(400, 401, 403, 404, 422))  # fmt: skip
    async def trace_route(who: Who, body: TraceIn) -> TraceOut:
        """The relation path between two refs (shortest, explained relations first), paged."""
        s = await q.snapshot(ctx.pool, who.tenant, body.about, await known(who, body.known_at))
        held = {e.ref for e in s.entries} | {v.ref for v in s.evidence}
        for ref in (body.from_ref, body.to_ref):
            if ref not in held:
                raise ApiError(404, "REF_NOT_FOUND", "no such ref in that about at knownAt")
        started = time.perf_counter()
        path, explored = trace(s, body.from_ref, body.to_ref, body.max_depth)
        part = path[body.page_offset : body.page_offset + body.page_size]
        end = body.page_offset + len(part)
        metrics.record("trace", who.tenant, body.about, started, refs=len(part), explored=explored,
                       pageOffset=body.page_offset, pages=-(-len(path) // body.page_size))  # fmt: skip
        return TraceOut(about=body.about, known_at=s.known_at, found=bool(path) or body.from_ref == body.to_ref,
                        trace=part, hops=len(path), explored=explored, page_total=len(path),
                        next_offset=end if end < len(path) else None,
                        warnings=[] if path else
                        [f"NO_PATH: no relation path within {body.max_depth} hops"])  # fmt: skip

    @r.post("/kmp/v1/inspect", response_model=q.Inspected, response_model_by_alias=True,
            responses=error_responses(400, 401, 403, 404, 422))  # fmt: skip
    async def inspect_route(who: Who, body: InspectIn) -> q.Inspected:
        """One entry or evidence item with its links and evidence; its whole text only with include.raw."""
        started = time.perf_counter()
        s = await q.snapshot(ctx.pool, who.tenant, body.about, await known(who, body.known_at))
        i = body.include
        found = q.inspect(s, body.ref, i.incoming, i.outgoing, i.evidence, i.raw)
        if found is None:
            raise ApiError(404, "REF_NOT_FOUND", "no such ref in that about at knownAt")
        metrics.record("inspect", who.tenant, body.about, started, refs=1 + len(found.links.incoming)
                       + len(found.links.outgoing), raw=i.raw, ref=body.ref, claw=who.claw_id)  # fmt: skip
        return found

    @r.post("/kmp/v1/diagnose", response_model=Diagnosis, response_model_by_alias=True,
            responses=error_responses(400, 401, 403, 422))  # fmt: skip
    async def diagnose(who: Who, body: DiagnoseIn) -> Diagnosis:
        """Classify a failed answer: ingestion, projection, retrieval, proof, reader or reasoning gap, from
        what the read model holds now and at knownAt and what ask returns at knownAt."""
        at = await known(who, body.known_at)
        expected = frozenset(body.expected_refs)
        now = await q.snapshot(ctx.pool, who.tenant, body.about, q.NOW)
        # Without knownAt the read is now: what the model holds now is what it held then.
        then = now if body.known_at is None else await q.snapshot(ctx.pool, who.tenant, body.about, at)

        def held(s: Snapshot) -> frozenset[str]:
            return expected & ({e.ref for e in s.entries} | {v.ref for v in s.evidence})

        scope = resolve_scope("CURRENT_ABOUT", body.about, None)
        res = await q.ask(ctx.pool, who.tenant, scope, body.question, body.answer_policy, at, body.limit)
        retrieved = expected & {b.ref for b in res.because}
        proven = retrieved - set(res.proof.missing)
        facts = AnswerFacts(expected=expected, logged=held(now), projected=held(then), retrieved=retrieved,
                            proven=proven, used=expected & set(body.used_refs), correct=body.correct)  # fmt: skip
        failure, lost = classify(facts)
        return Diagnosis(failure=failure, lost=sorted(lost), logged=sorted(facts.logged),
                         projected=sorted(facts.projected), retrieved=sorted(retrieved), proven=sorted(proven),
                         used=sorted(facts.used), ask=res)  # fmt: skip

    return r
