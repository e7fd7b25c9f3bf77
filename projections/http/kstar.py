"""KSTAR over HTTP: ``/kstar/v1/*`` (seed 003) — traces, perceptions, facts, skills, control tokens,
registrations, export / import / verify-bundle, the changes a sync pulls, statistics, forgetting.

Every write is a ``kstar`` envelope through the gate and the kstar processor, which judges it against
the memory as logged before it; the route waits (``wait_ms``) for that verdict. A claw reads and
writes its own memories (``memory`` = its id, the default, or ``<clawId>/<name>``); a tenant token
without a claw may read any memory of its tenant. The MCP ``kstar`` tools call these same routes.

No `from __future__ import annotations` here: FastAPI must see the real dependency types.
"""

import json
import time
import uuid
from collections.abc import Callable
from typing import Annotated, Any, TypeVar
from urllib.parse import urlsplit

import httpx
from fastapi import APIRouter, Depends, Query, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import ValidationError

from contracts.models import KstarPayload
from governance.kstar import bundle as b
from governance.kstar import filters as f
from governance.kstar import tokens as tk
from governance.kstar.apply import iso, owns
from governance.kstar.records import ControlToken, KstarRefusal, parse_record
from projections.auth import Principal
from projections.gate.gateway import describe_validation
from projections.http.context import Ctx
from projections.http.errors import ApiError, error_responses
from projections.http.kstar_models import (
    ApplyIn,
    ExportIn,
    FactQueryIn,
    ImportIn,
    OutcomeIn,
    QueryIn,
    RegisterIn,
    RevokeIn,
    SearchIn,
    SyncIn,
    TokenIn,
    VerifyBundleIn,
    VerifyIn,
    VerifyOut,
    WriteOut,
)
from projections.kstar import io as kio
from projections.kstar import queries as q
from projections.kstar.io import Writer, document
from projections.kstar.sync import Remote, sync
from projections.queries import bind_tenant

P = "/kstar/v1"
T = TypeVar("T")
_STATUS = {"TOKEN_NOT_FOUND": 404, "SKILL_NOT_FOUND": 404, "TOKEN_EXISTS": 409, "KSTAR_TRACE_IMMUTABLE": 409,
           "KSTAR_SKILL_NAME_TAKEN": 409, "DUPLICATE": 409, "REPLAYED": 409, "KSTAR_NOT_YOUR_MEMORY": 403,
           "CLAW_SUSPENDED": 403}  # fmt: skip
_ROOTS = {"trace": frozenset({"id", "timestamp", "situation", "task", "action", "result", "metadata"}),
          "perception": frozenset({"id", "type", "subject", "content", "confidence", "evidence", "created_at",
                                   "updated_at", "valid_until"}),
          "fact": frozenset({"id", "schema", "data", "source", "verified", "created_at", "updated_at"}),
          "skill": frozenset({"id", "name", "description", "learned_from", "definition", "maturity"}),
          "control_token": frozenset({"token_id", "type", "scope", "permissions", "granted_by", "granted_at",
                                      "delegation_chain", "expires_at", "revoked", "revoked_at",
                                      "revocation_reason"})}  # fmt: skip
WRITE_ERRORS: dict[int | str, dict[str, Any]] = {202: {"description": "published; not judged within waitMs (PENDING)"}}
WRITE_ERRORS |= error_responses(400, 401, 403, 404, 409, 413, 422, 503,
                               _422="KSTAR_INVALID_RECORD, KSTAR_SCHEMA_VIOLATION, KSTAR_UNKNOWN_SCHEMA, "
                               "KSTAR_CATEGORY_FIELD_MISSING, TOKEN_*, DELEGATION_*, INVALID_FIELD",
                               _409="KSTAR_TRACE_IMMUTABLE, TOKEN_EXISTS, KSTAR_SKILL_NAME_TAKEN, DUPLICATE",
                               _404="TOKEN_NOT_FOUND, SKILL_NOT_FOUND")  # fmt: skip
READ_ERRORS = error_responses(400, 401, 403, 404, 413, 422, 503)


def _refused(exc: KstarRefusal | b.BundleError) -> ApiError:
    return ApiError(_STATUS.get(exc.code, 422), exc.code, exc.detail)


def router(ctx: Ctx) -> APIRouter:
    r = APIRouter(tags=["portable long-term memory (KSTAR)"])
    Who = Annotated[Principal, Depends(ctx.principal)]
    Mem = Annotated[str | None, Query(max_length=256, description="default: the calling claw's own memory")]
    Wait = Annotated[
        int, Query(alias="waitMs", ge=0, le=30_000, description="how long to wait for the verdict (ms); else 202")
    ]
    deps = ctx.deps

    def memory_of(who: Principal, memory: str | None, write: bool = False) -> str:
        if who.claw_id is None:
            if write or memory is None:
                raise ApiError(422, "MISSING_FIELD", "a token bound to a claw is needed to write, or name ?memory=")
            return memory
        m = memory or who.claw_id
        if not owns(who.claw_id, m):
            raise ApiError(403, "KSTAR_NOT_YOUR_MEMORY", "a claw uses only its own memory (its id, or <clawId>/<name>)")
        return m

    def writer(who: Principal) -> Writer:
        assert who.claw_id is not None  # memory_of(write=True) made sure
        return Writer(who.tenant, who.claw_id, deps.tenants[who.tenant])

    async def on_connection(tenant: str, work: Callable[[kio.Conn], T]) -> T:
        """``work`` in a worker thread, on a connection of the API's synchronous pool bound to ``tenant`` while
        it runs: export, import and sync (projections.kstar.io, projections.kstar.sync) are synchronous and poll
        for verdicts."""

        def run() -> T:
            with ctx.sync_pool.connection() as conn:
                bind_tenant(conn, tenant)
                return work(conn)

        return await run_in_threadpool(run)

    async def write(who: Principal, memory: str, op: str, kind: str, record_id: str, doc: dict[str, Any],
                    wait_ms: int, response: Response, shown: dict[str, Any] | None = None,
                    idempotency_key: str | None = None) -> WriteOut:  # fmt: skip
        try:
            payload = KstarPayload(op_id=f"op-{uuid.uuid4().hex[:16]}", memory=memory, op=op, kind=kind,  # type: ignore[arg-type]
                                   record_id=record_id, document=document(doc))  # fmt: skip
            env = writer(who).envelope(payload, idempotency_key)
        except ValidationError as exc:  # a NUL or a lone surrogate in an id or a document, a field over its bound
            raise ApiError(422, "INVALID_FIELD", describe_validation(exc.errors())) from exc
        pos = await ctx.publish(env)
        out = WriteOut(status="PENDING", kind=kind, record_id=record_id, memory=memory, event_id=env.event_id,
                       consistency_token=str(pos), record=shown)  # fmt: skip
        deadline = time.monotonic() + wait_ms / 1000
        while True:
            found = await q.verdict(ctx.pool, who.tenant, env.event_id)
            if found is not None or time.monotonic() >= deadline:
                break
            await _sleep()
        if found is None:
            response.status_code = 202
            return out
        if found.outcome == "REFUSED":
            code = found.reason_code or "REFUSED"
            raise ApiError(_STATUS.get(code, 422), code, found.detail or code)
        return out.model_copy(update={"status": found.outcome, "known_at": found.known_at,
                                      "record_id": found.record_id or record_id})  # fmt: skip

    async def store(who: Principal, memory: str | None, kind: str, doc: dict[str, Any], wait_ms: int,
                    response: Response) -> WriteOut:  # fmt: skip
        m = memory_of(who, memory, write=True)
        id_field = "token_id" if kind == "control_token" else "id"
        doc = {**doc, id_field: doc.get(id_field) or f"{kind[:5]}-{uuid.uuid4()}"}
        try:  # the same rules the processor applies, so a malformed record is answered at once
            parse_record(kind, doc, iso(int(time.time() * 1000)))
        except KstarRefusal as exc:
            raise _refused(exc) from exc
        return await write(who, m, "STORE", kind, str(doc[id_field]), doc, wait_ms, response)

    # -- traces (seed §3.2.1, §8.1) ------------------------------------------------------------
    @r.post(f"{P}/traces", response_model=WriteOut, response_model_by_alias=True, responses=WRITE_ERRORS)
    async def store_trace(who: Who, body: dict[str, Any], response: Response, memory: Mem = None,
                          wait_ms: Wait = 5_000) -> WriteOut:  # fmt: skip
        """kstar:store_trace — situation, task and action are required; result is optional."""
        return await store(who, memory, "trace", body, wait_ms, response)

    @r.get(P + "/traces/{trace_id}", response_model=q.Stored, response_model_by_alias=True, responses=READ_ERRORS)
    async def get_trace(who: Who, trace_id: str, memory: Mem = None) -> q.Stored:
        return await _get(who, memory, "trace", trace_id)

    @r.post(f"{P}/traces/query", response_model=list[q.Stored], response_model_by_alias=True, responses=READ_ERRORS)
    async def query_traces(who: Who, body: QueryIn, memory: Mem = None) -> list[q.Stored]:
        """kstar:query_traces — dotted paths (situation.domain, result.success, action.type) and ranges
        ({gte, lte}) on timestamp."""
        return await _query(who, memory, "trace", body)

    @r.post(f"{P}/traces/search", response_model=list[q.Stored], response_model_by_alias=True, responses=READ_ERRORS)
    async def search_traces(who: Who, body: SearchIn, memory: Mem = None) -> list[q.Stored]:
        """Full-text search over a memory's traces (all their strings, or only `fields`)."""
        for path in body.fields:
            _conds({path: ""}, "trace")
        return await q.query(ctx.pool, who.tenant, memory_of(who, memory), "trace", limit=body.limit,
                             text=body.query, text_fields=body.fields)  # fmt: skip

    # -- perceptions (§3.2.2, §8.2) -----------------------------------------------------------
    @r.post(f"{P}/perceptions", response_model=WriteOut, response_model_by_alias=True, responses=WRITE_ERRORS)
    async def store_perception(who: Who, body: dict[str, Any], response: Response, memory: Mem = None,
                               wait_ms: Wait = 5_000) -> WriteOut:  # fmt: skip
        """kstar:store_perception — content required; confidence in [0, 1]. Storing an existing id updates it."""
        return await store(who, memory, "perception", body, wait_ms, response)

    @r.get(f"{P}/perceptions", response_model=list[q.Stored], response_model_by_alias=True, responses=READ_ERRORS)
    async def get_perceptions(who: Who, subject: Annotated[str, Query(max_length=1024)], memory: Mem = None,
                              min_confidence: Annotated[float, Query(alias="minConfidence", ge=0, le=1)] = 0.7,
                              include_expired: Annotated[bool, Query(alias="includeExpired")] = False,
                              limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> list[q.Stored]:  # fmt: skip
        """A subject's perceptions at or above min_confidence, most confident first; expired ones
        (valid_until in the past) only when asked."""
        conds = [f.Condition(("subject",), "eq", subject), f.Condition(("confidence",), "gte", min_confidence)]
        if not include_expired:  # no valid_until, or one not passed yet (fixed-width times compare as text)
            conds.append(f.Condition(("valid_until",), "gte", iso(int(time.time() * 1000))))
            found = await q.query(ctx.pool, who.tenant, memory_of(who, memory), "perception", conds,
                                  order=("confidence", True), limit=limit, or_missing=("valid_until",))  # fmt: skip
            return found
        return await q.query(ctx.pool, who.tenant, memory_of(who, memory), "perception", conds,
                             order=("confidence", True), limit=limit)  # fmt: skip

    @r.post(f"{P}/perceptions/query", response_model=list[q.Stored], response_model_by_alias=True,
            responses=READ_ERRORS)  # fmt: skip
    async def query_perceptions(who: Who, body: QueryIn, memory: Mem = None) -> list[q.Stored]:
        return await _query(who, memory, "perception", body)

    # -- facts (§3.2.2, §8.3, §10.1) ----------------------------------------------------------
    @r.post(f"{P}/facts", response_model=WriteOut, response_model_by_alias=True, responses=WRITE_ERRORS)
    async def store_fact(who: Who, body: dict[str, Any], response: Response, memory: Mem = None,
                         wait_ms: Wait = 5_000) -> WriteOut:  # fmt: skip
        """kstar:store_fact — schema and data required; data is validated against the registered schema."""
        return await store(who, memory, "fact", body, wait_ms, response)

    @r.get(f"{P}/facts", response_model=list[q.Stored], response_model_by_alias=True, responses=READ_ERRORS)
    async def get_facts(who: Who, schema: Annotated[str, Query(max_length=256)], memory: Mem = None,
                        limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> list[q.Stored]:  # fmt: skip
        return await q.query(ctx.pool, who.tenant, memory_of(who, memory), "fact",
                             [f.Condition(("schema",), "eq", schema)], limit=limit)  # fmt: skip

    @r.post(f"{P}/facts/query", response_model=list[q.Stored], response_model_by_alias=True, responses=READ_ERRORS)
    async def query_facts(who: Who, body: FactQueryIn, memory: Mem = None) -> list[q.Stored]:
        """query_facts(schema, path="$.learning_style", value="visual"): JSONPath into the fact's data."""
        conds = [f.Condition(("schema",), "eq", body.schema_name)]
        if body.path is not None:
            try:
                conds.append(f.Condition(("data", *f.parse_jsonpath(body.path)), "eq", body.value))
            except KstarRefusal as exc:
                raise _refused(exc) from exc
        return await q.query(ctx.pool, who.tenant, memory_of(who, memory), "fact", conds, limit=body.limit)

    # -- skills (§3.2.3) -------------------------------------------------------------------------
    @r.post(f"{P}/skills", response_model=WriteOut, response_model_by_alias=True, responses=WRITE_ERRORS)
    async def store_skill(who: Who, body: dict[str, Any], response: Response, memory: Mem = None,
                          wait_ms: Wait = 5_000) -> WriteOut:  # fmt: skip
        """kstar:store_skill — name and definition required; maturity starts as novice."""
        return await store(who, memory, "skill", body, wait_ms, response)

    @r.get(P + "/skills/{name}", response_model=q.Stored, response_model_by_alias=True, responses=READ_ERRORS)
    async def get_skill(who: Who, name: str, memory: Mem = None) -> q.Stored:
        found = await q.skill_by_name(ctx.pool, who.tenant, memory_of(who, memory), name)
        if found is None:
            raise ApiError(404, "SKILL_NOT_FOUND", "no skill of that name in this memory")
        return found

    @r.post(P + "/skills/{name}/outcome", response_model=WriteOut, response_model_by_alias=True,
            responses=WRITE_ERRORS)  # fmt: skip
    async def update_skill_maturity(who: Who, name: str, body: OutcomeIn, response: Response, memory: Mem = None,
                                    wait_ms: Wait = 5_000) -> WriteOut:  # fmt: skip
        """kstar:update_skill_maturity — one use of the skill, successful or not; the level follows
        (novice < 5 uses; competent ≥ 5 at ≥ 60 %; proficient ≥ 20 at ≥ 75 %; expert ≥ 50 at ≥ 90 %)."""
        m = memory_of(who, memory, write=True)
        return await write(who, m, "SKILL_OUTCOME", "skill", name, {"outcome": body.outcome}, wait_ms, response)

    # -- control tokens (§7) -------------------------------------------------------------------------
    @r.post(f"{P}/tokens", response_model=WriteOut, response_model_by_alias=True, responses=WRITE_ERRORS)
    async def store_control_token(who: Who, body: TokenIn, response: Response, memory: Mem = None,
                                  wait_ms: Wait = 5_000) -> WriteOut:  # fmt: skip
        """kstar:store_control_token — give `token` (complete and signed), or `tokenType` and `scope` (and
        permissions, expiresAt, delegationChain) for the server to issue one signed with the calling
        claw's issuer key (Ed25519). A delegated token is checked against its parents."""
        m = memory_of(who, memory, write=True)
        if body.token is not None:
            doc = body.token
        else:
            if not body.token_type or not body.scope:
                raise ApiError(422, "MISSING_FIELD", "give `token`, or `tokenType` and `scope`")
            assert who.claw_id is not None
            raw = {"token_id": body.token_id or f"tok-{uuid.uuid4()}", "type": body.token_type, "scope": body.scope,
                   "permissions": body.permissions, "granted_by": body.granted_by or f"urn:hivemem:{who.tenant}:"
                   f"claw:{who.claw_id}", "granted_at": iso(int(time.time() * 1000)),
                   "delegation_chain": body.delegation_chain, "expires_at": body.expires_at, "signature": "",
                   "signer_key": "", "lineage_hash": ""}  # fmt: skip
            try:
                token = ControlToken.model_validate(raw)
            except ValidationError as exc:  # str(exc) would quote the input
                raise ApiError(422, "KSTAR_INVALID_RECORD", describe_validation(list(exc.errors()))) from exc
            signed = tk.sign_token(token, tk.issuer_key(deps.token_secret, who.tenant, who.claw_id))
            doc = signed.model_dump(mode="json")
        try:
            parse_record("control_token", doc, iso(int(time.time() * 1000)))
        except KstarRefusal as exc:
            raise _refused(exc) from exc
        return await write(who, m, "STORE", "control_token", str(doc.get("token_id")), doc, wait_ms, response,
                           shown=doc)  # fmt: skip

    @r.post(f"{P}/tokens/verify", response_model=VerifyOut, response_model_by_alias=True, responses=READ_ERRORS)
    async def verify_control_token(who: Who, body: VerifyIn, memory: Mem = None) -> VerifyOut:
        """kstar:verify_control_token — in the seed's order: not found, revoked, expired, scope mismatch;
        then every ancestor in the delegation chain must be unrevoked and unexpired."""
        m = memory_of(who, memory)
        held = await q.get(ctx.pool, who.tenant, m, "control_token", body.token_id)
        token = ControlToken.model_validate(held.record) if held else None
        ancestors = await _ancestors(who.tenant, m, token)
        v = tk.verify(token, body.scope, int(time.time() * 1000), ancestors)
        return VerifyOut(valid=v.valid, reason=v.reason, code=v.code, token=held.record if v.valid and held else None)

    @r.post(P + "/tokens/{token_id}/revoke", response_model=WriteOut, response_model_by_alias=True,
            responses=WRITE_ERRORS)  # fmt: skip
    async def revoke_control_token(who: Who, token_id: str, body: RevokeIn, response: Response, memory: Mem = None,
                                   wait_ms: Wait = 5_000) -> WriteOut:  # fmt: skip
        """kstar:revoke_control_token — its descendants stop verifying at once (404 TOKEN_NOT_FOUND if unknown)."""
        m = memory_of(who, memory, write=True)
        return await write(who, m, "REVOKE", "control_token", token_id, {"reason": body.reason}, wait_ms, response)

    @r.get(P + "/tokens/{token_id}/lineage", response_model=list[dict[str, Any]], responses=READ_ERRORS)
    async def get_token_lineage(who: Who, token_id: str, memory: Mem = None) -> list[dict[str, Any]]:
        """kstar:get_token_lineage — the token, then its parents in delegation-chain order ([] if unknown)."""
        m = memory_of(who, memory)
        held = await q.get(ctx.pool, who.tenant, m, "control_token", token_id)
        if held is None:
            return []
        token = ControlToken.model_validate(held.record)
        known = {token.token_id: token, **await _ancestors(who.tenant, m, token)}
        return [t.model_dump(mode="json") for t in tk.lineage(token_id, known)]

    @r.get(f"{P}/tokens", response_model=list[q.Stored], response_model_by_alias=True, responses=READ_ERRORS)
    async def list_tokens_by_type(who: Who, type: Annotated[str, Query(max_length=256)], memory: Mem = None,
                                  limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> list[q.Stored]:  # fmt: skip
        return await q.query(ctx.pool, who.tenant, memory_of(who, memory), "control_token",
                             [f.Condition(("type",), "eq", type)], limit=limit)  # fmt: skip

    async def _ancestors(tenant: str, memory: str, token: ControlToken | None) -> dict[str, ControlToken]:
        if token is None or not token.delegation_chain:
            return {}
        docs = await q.get_many(ctx.pool, tenant, memory, "control_token", token.delegation_chain)
        return {k: ControlToken.model_validate(v) for k, v in docs.items()}

    # -- registrations (§10) -------------------------------------------------------------------------
    for path, kind in (("schemas", "schema"), ("trace-categories", "trace_category"), ("token-types", "token_type")):

        def make(kind: str = kind) -> Any:
            async def register(who: Who, body: RegisterIn, response: Response, memory: Mem = None,
                               wait_ms: Wait = 5_000) -> WriteOut:  # fmt: skip
                m = memory_of(who, memory, write=True)
                doc = {**body.definition, "name": body.name}
                return await write(who, m, "REGISTER", kind, body.name, doc, wait_ms, response)

            register.__doc__ = f"Register a {kind.replace('_', ' ')} in this memory (seed §10)."
            return register

        r.post(f"{P}/{path}", response_model=WriteOut, response_model_by_alias=True, responses=WRITE_ERRORS,
               name=f"register_{kind}")(make())  # fmt: skip

    # -- export / import (§5) ------------------------------------------------------------------------
    @r.post(f"{P}/export", response_model=dict[str, Any], responses=READ_ERRORS)
    async def export_bundle(who: Who, body: ExportIn, memory: Mem = None) -> dict[str, Any]:
        """kstar:export_bundle — the memory as a kstar-bundle 1.0.0, signed with the claw's issuer key;
        control tokens only when includeTokens; encrypted (scrypt + AES-256-GCM) with a passphrase."""
        m = memory_of(who, memory)
        types: frozenset[str] = frozenset(body.types) if body.types else frozenset(b.KINDS) - {"control_tokens"}
        if body.include_tokens:
            types |= {"control_tokens"}
        signer = tk.issuer_key(deps.token_secret, who.tenant, who.claw_id) if body.sign and who.claw_id else None
        try:
            flt = b.ExportFilter(types=types, include_tokens=body.include_tokens, date_from=body.date_from,
                                 date_to=body.date_to)  # fmt: skip
            flt.admits("traces", {"timestamp": "2000-01-01T00:00:00.000Z"})  # a bad from/to fails here, not later
            enc = await on_connection(who.tenant, lambda conn: kio.export_document(  # the CLI's too: one implementation
                conn, who.tenant, m, flt, signer, body.passphrase, None, body.include_episodes))  # fmt: skip
        except b.BundleError as exc:
            raise _refused(exc) from exc
        except ValueError as exc:  # an unreadable from / to
            raise ApiError(422, "INVALID_FIELD", f"from / to: {exc}"[:300]) from exc
        return enc.bundle if body.passphrase is None else dict(json.loads(enc.data))

    @r.post(f"{P}/verify-bundle", response_model=dict[str, Any], responses=READ_ERRORS)
    async def verify_bundle(who: Who, body: VerifyBundleIn) -> dict[str, Any]:
        """Check a bundle without importing it: format, checksum, signature, statistics."""
        try:
            check = b.decode_bundle(json.dumps(body.bundle).encode(), (body.passphrase or "").encode() or None).check
        except b.BundleError as exc:
            raise _refused(exc) from exc
        return {"valid": True, "checksum": check.checksum, "signed": check.signed, "signerKey": check.signer_key,
                "statistics": check.statistics, "counts": check.counts}  # fmt: skip

    @r.post(f"{P}/import", response_model=dict[str, Any], responses=WRITE_ERRORS)
    async def import_bundle(who: Who, body: ImportIn, memory: Mem = None) -> dict[str, Any]:
        """kstar:import_bundle — merge (existing records win; each difference reported in `conflicts`) or
        replace (confirm=true). A tampered, wrongly signed or wrongly decrypted bundle is refused whole."""
        m = memory_of(who, memory, write=True)
        if body.mode == "replace" and not body.confirm:
            raise ApiError(422, "CONFIRMATION_REQUIRED", "replace removes the memory's records first: send confirm")
        try:
            decoded = b.decode_bundle(json.dumps(body.bundle).encode(), (body.passphrase or "").encode() or None)
            result = await on_connection(who.tenant, lambda conn: kio.import_document(
                conn, writer(who), m, decoded.bundle, body.mode, body.types, deps.publisher, body.wait_ms / 1000,
                None, None, decoded.check.checksum))  # fmt: skip
        except b.BundleError as exc:
            raise _refused(exc) from exc
        return result.to_wire()

    # -- sync (§6) ------------------------------------------------------------------------------------
    @r.post(f"{P}/apply", response_model=dict[str, Any], responses=WRITE_ERRORS)
    async def apply_pushed(who: Who, body: ApplyIn, memory: Mem = None) -> dict[str, Any]:
        """The remote side of a sync's push: each record stored with origin SYNC (the pushing side
        already settled conflicts by its policy; a revocation still sticks)."""
        m = memory_of(who, memory, write=True)
        try:
            result = await on_connection(who.tenant, lambda conn: kio.apply_records(
                conn, writer(who), m, body.records, body.origin_ref, deps.publisher, 60.0))  # fmt: skip
        except b.BundleError as exc:
            raise _refused(exc) from exc
        return result.to_wire()

    @r.post(f"{P}/sync", response_model=dict[str, Any], responses=WRITE_ERRORS)
    async def sync_memory(who: Who, body: SyncIn, memory: Mem = None) -> dict[str, Any]:
        """Sync this memory with the same memory on another HiveMem (this side primary): pull its changes
        since the last sync, settle conflicts (traces local wins; facts and tokens remote wins; perceptions
        and skills local wins), apply, push, and remember where it got to. Answers {pulled, pushed,
        conflicts, retried, failed}."""
        m = memory_of(who, memory, write=True)
        url = urlsplit(body.remote_url)
        if url.scheme != "https" and not (url.scheme == "http" and url.hostname in ("127.0.0.1", "localhost", "::1")):
            raise ApiError(422, "SYNC_HTTPS_REQUIRED", "the remote must be https:// (plain http only on localhost)")
        try:
            result = await on_connection(who.tenant, lambda conn: sync(
                conn, writer(who), m, Remote(body.remote_url, body.remote_token), deps.publisher,
                f"hivemem:{who.tenant}/{who.claw_id}", wait_s=body.wait_ms / 1000))  # fmt: skip
        except httpx.HTTPStatusError as exc:
            raise ApiError(502, "SYNC_REMOTE_REFUSED", f"the remote answered {exc.response.status_code}: "
                           f"{exc.response.text[:300]}") from exc  # fmt: skip
        except httpx.HTTPError as exc:
            raise ApiError(502, "SYNC_REMOTE_UNAVAILABLE", f"the remote did not answer: {type(exc).__name__}") from exc
        return result.to_wire()

    # -- sync support, statistics, forgetting ---------------------------------------------------------
    @r.get(f"{P}/changes", response_model=list[q.Stored], response_model_by_alias=True, responses=READ_ERRORS)
    async def changes(who: Who, memory: Mem = None, since: Annotated[int, Query(ge=0)] = 0,
                      kinds: Annotated[str, Query(max_length=200)] = "trace,perception,fact,skill,control_token",
                      limit: Annotated[int, Query(ge=1, le=1000)] = 1000) -> list[q.Stored]:  # fmt: skip
        """Records whose last change this deployment learnt after `since` (its log time): a sync's pull."""
        return await q.changes(ctx.pool, who.tenant, memory_of(who, memory), since, kinds.split(","), limit)

    @r.get(f"{P}/stats", response_model=dict[str, Any], responses=READ_ERRORS)
    async def get_stats(who: Who, memory: Mem = None) -> dict[str, Any]:
        return await q.stats(ctx.pool, who.tenant, memory_of(who, memory))

    @r.delete(f"{P}/memory", response_model=WriteOut, response_model_by_alias=True, responses=WRITE_ERRORS)
    async def forget_memory(who: Who, response: Response, memory: Mem = None, confirm: bool = False,
                            wait_ms: Wait = 5_000) -> WriteOut:  # fmt: skip
        """Delete the memory (F-01): every record leaves the read models; the log keeps the operations
        (see docs/kstar.md for the log copy). Send confirm=true."""
        m = memory_of(who, memory, write=True)
        if not confirm:
            raise ApiError(422, "CONFIRMATION_REQUIRED", "deleting a memory cannot be undone: send confirm=true")
        return await write(who, m, "FORGET", "memory", "", {}, wait_ms, response)

    async def _get(who: Principal, memory: str | None, kind: str, record_id: str) -> q.Stored:
        found = await q.get(ctx.pool, who.tenant, memory_of(who, memory), kind, record_id)
        if found is None:
            raise ApiError(404, "NOT_FOUND", f"no {kind} with that id in this memory")
        return found

    async def _query(who: Principal, memory: str | None, kind: str, body: QueryIn) -> list[q.Stored]:
        order = None
        if body.order_by:
            try:
                order = f.parse_order(body.order_by, _ROOTS[kind])
            except KstarRefusal as exc:
                raise _refused(exc) from exc
        return await q.query(ctx.pool, who.tenant, memory_of(who, memory), kind, _conds(body.filters, kind), order,
                             body.limit, body.offset)  # fmt: skip

    return r


def _conds(filters: dict[str, Any], kind: str) -> list[Any]:
    try:
        return f.parse_filters(filters, _ROOTS[kind])
    except KstarRefusal as exc:
        raise _refused(exc) from exc


async def _sleep() -> None:
    import asyncio

    await asyncio.sleep(0.02)
