"""Judging one KSTAR operation against its memory as logged before it: a pure function.

``decide(op, view, ctx)`` returns the ``Outcome`` (what the record now reads as) or raises
``KstarRefusal`` with a reason code. The kstar processor calls it for each accepted ``kstar``
envelope, in log order per memory (all of a memory's operations share one partition), and puts the
outcome on the log; the read model only folds outcomes, so a replay never judges again.

Conflicts (the record exists with other content), by ``on_conflict``:
- ``DEFAULT``: traces are immutable (``KSTAR_TRACE_IMMUTABLE``) and a token is changed only by a
  revocation (``TOKEN_EXISTS``); perceptions, facts and skills are updated (``created_at`` kept);
- ``KEEP``: the existing record stays, the verdict is ``CONFLICT`` (import's merge mode reports it);
- ``OVERWRITE``: the incoming record wins (import ``--replace``, sync's remote-wins types), except that
  a revocation always sticks: a revoked token never comes back to life through an import or a sync.
Identical content is ``UNCHANGED``, which is what makes importing a bundle twice change nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from contracts.models import KstarPayload
from governance.kstar import domains, skills, tokens
from governance.kstar.canonical import canonical_json
from governance.kstar.records import (
    ControlToken,
    Fact,
    KstarRefusal,
    Skill,
    Trace,
    canonical_doc,
    iso_to_ms,
    parse_record,
)

RECORD_KINDS = ("trace", "perception", "fact", "skill", "control_token")
REGISTRY_KINDS = ("schema", "trace_category", "token_type")
MAX_DOCUMENT = 65_536


@dataclass(frozen=True)
class Held:
    """A record as the memory holds it."""

    doc: dict[str, Any]
    content_hash: str
    name: str = ""


@dataclass
class MemoryView:
    """What judging needs of one memory: the records a batch names, and its registrations."""

    records: dict[tuple[str, str], Held] = field(default_factory=dict)  # (kind, record_id)
    skill_ids: dict[str, str] = field(default_factory=dict)  # skill name -> id
    # Registrations by kind, and what parsing them gave: read by every trace and token of a batch.
    _registry: dict[str, dict[str, Held]] = field(default_factory=dict)
    _parsed: dict[str, Any] = field(default_factory=dict)

    def get(self, kind: str, record_id: str) -> Held | None:
        return self.records.get((kind, record_id))

    def hold(self, kind: str, record_id: str, held: Held) -> None:
        self.records[(kind, record_id)] = held
        if kind == "skill" and held.name:
            self.skill_ids[held.name] = record_id
        if kind in REGISTRY_KINDS:
            self._registry.setdefault(kind, {})[record_id] = held
            self._parsed.pop(kind, None)

    def drop(self, kinds: Sequence[str]) -> None:
        for key in [k for k in self.records if k[0] in kinds]:
            del self.records[key]
        if "skill" in kinds:
            self.skill_ids.clear()
        for kind in kinds:
            self._registry.pop(kind, None)
            self._parsed.pop(kind, None)

    def registered(self, kind: str) -> list[Held]:
        return list(self._registry.get(kind, {}).values())

    def parsed(self, kind: str, parse: Callable[[Held], Any]) -> list[Any]:
        """The registrations of a kind, parsed once per change."""
        if kind not in self._parsed:
            self._parsed[kind] = [parse(h) for h in self.registered(kind)]
        out: list[Any] = self._parsed[kind]
        return out


@dataclass(frozen=True)
class OpContext:
    tenant: str
    claw_id: str
    at_ms: int  # the operation's broker log time
    # Is signer_key (base64) the issuer key this deployment derives for (tenant, claw)?
    own_issuer: Callable[[str, str, str], bool]

    @property
    def at_iso(self) -> str:
        return iso(self.at_ms)


@dataclass(frozen=True)
class Outcome:
    change: str  # STORED | UNCHANGED | CONFLICT | FORGOTTEN
    kind: str
    record_id: str
    doc: dict[str, Any] | None = None
    content_hash: str = ""
    existing_hash: str = ""
    name: str = ""
    record_time: str = ""
    forget_kinds: tuple[str, ...] = ()
    canonical: str = ""  # doc as RFC 8785 JSON: what content_hash hashed, and what the event carries


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def content_hash(doc: Mapping[str, Any]) -> str:
    # bundle.canonical_json is RFC 8785 byte for byte (tested against rfc8785.dumps) and ~10x faster.
    return "sha256:" + hashlib.sha256(canonical_json(doc)).hexdigest()


def _stored(kind: str, rid: str, doc: dict[str, Any], name: str = "", text: bytes | None = None) -> Outcome:
    text = canonical_json(doc) if text is None else text
    return Outcome("STORED", kind, rid, doc, "sha256:" + hashlib.sha256(text).hexdigest(), name=name,
                   record_time=record_time(kind, doc), canonical=text.decode())  # fmt: skip


def owns(claw_id: str, memory: str) -> bool:
    """A claw writes its own memories only: ``<clawId>`` and ``<clawId>/<name>``."""
    return memory == claw_id or memory.startswith(claw_id + "/")


def record_time(kind: str, doc: Mapping[str, Any]) -> str:
    if kind == "trace":
        return str(doc.get("timestamp") or "")
    if kind == "control_token":
        return str(doc.get("granted_at") or "")
    if kind == "skill":
        return str((doc.get("maturity") or {}).get("last_used") or "")
    return str(doc.get("created_at") or "")


def _document(op: KstarPayload) -> dict[str, Any]:
    try:
        doc = json.loads(op.document)
    except ValueError as exc:
        raise KstarRefusal("KSTAR_BAD_DOCUMENT", "document is not JSON") from exc
    if not isinstance(doc, dict):
        raise KstarRefusal("KSTAR_BAD_DOCUMENT", "document must be a JSON object")
    return doc


def decide(op: KstarPayload, view: MemoryView, ctx: OpContext) -> Outcome:
    if not owns(ctx.claw_id, op.memory):
        raise KstarRefusal("KSTAR_NOT_YOUR_MEMORY", "a claw writes only its own memory (its id, or <clawId>/<name>)")
    doc = _document(op)
    if op.op == "FORGET":
        return _forget(op)
    if op.op == "REGISTER":
        return _register(op, doc, view)
    if op.op == "REVOKE":
        return _revoke(op, doc, view, ctx)
    if op.op == "SKILL_OUTCOME":
        return _skill_outcome(op, doc, view, ctx)
    return _store(op, doc, view, ctx)


def _forget(op: KstarPayload) -> Outcome:
    kinds = (*RECORD_KINDS, *REGISTRY_KINDS) if op.kind == "memory" else (op.kind,)
    return Outcome("FORGOTTEN", op.kind, "", forget_kinds=kinds)


def _register(op: KstarPayload, doc: dict[str, Any], view: MemoryView) -> Outcome:
    name = op.record_id
    reg: Any
    if op.kind == "schema":
        if name in domains.BUILTIN_SCHEMAS:
            raise KstarRefusal("KSTAR_BUILTIN_NAME", "that schema name is built in")
        if not isinstance(doc.get("json_schema"), dict):
            raise KstarRefusal("KSTAR_INVALID_SCHEMA", "a schema registration is {json_schema, version?}")
        version = doc.get("version")
        reg = domains.parse_schema(name, doc["json_schema"], str(version) if version is not None else None)
        stored: dict[str, Any] = {"name": name, "version": reg.version, "json_schema": reg.json_schema}
    elif op.kind == "trace_category":
        reg = domains.parse_category({**doc, "name": doc.get("name", name)})
        if reg.name != name:
            raise KstarRefusal("KSTAR_ID_MISMATCH", "the category's name must be its record id")
        stored = {"name": reg.name, "domain": reg.domain, "required_fields": list(reg.required_fields)}
    elif op.kind == "token_type":
        if name in domains.BUILTIN_TOKEN_TYPES:
            raise KstarRefusal("KSTAR_BUILTIN_NAME", "that token type name is built in")
        reg = domains.parse_token_type({**doc, "name": doc.get("name", name)})
        if reg.name != name:
            raise KstarRefusal("KSTAR_ID_MISMATCH", "the token type's name must be its record id")
        stored = {"name": reg.name, "description": reg.description, "scope_pattern": reg.scope_pattern,
                  "required_permissions": list(reg.required_permissions)}  # fmt: skip
    else:
        raise KstarRefusal(
            "KSTAR_BAD_OPERATION", f"REGISTER takes a schema, trace_category or token_type, not {op.kind}"
        )
    return _put(op, stored, view, name=name, conflict=op.on_conflict if op.on_conflict != "DEFAULT" else "OVERWRITE")


def _revoke(op: KstarPayload, doc: dict[str, Any], view: MemoryView, ctx: OpContext) -> Outcome:
    if op.kind != "control_token":
        raise KstarRefusal("KSTAR_BAD_OPERATION", "REVOKE takes a control_token")
    held = view.get("control_token", op.record_id)
    if held is None:
        raise KstarRefusal("TOKEN_NOT_FOUND", "Token not found")
    reason = doc.get("reason")
    if not isinstance(reason, str) or not reason.strip() or len(reason) > 1024:
        raise KstarRefusal("KSTAR_INVALID_RECORD", "reason: a non-empty string of at most 1024 characters")
    token = ControlToken.model_validate(held.doc)
    if token.revoked:
        return Outcome("UNCHANGED", "control_token", op.record_id, content_hash=held.content_hash)
    revoked = canonical_doc(tokens.revoke(token, reason, ctx.at_iso))
    return _stored("control_token", op.record_id, revoked)


def _skill_outcome(op: KstarPayload, doc: dict[str, Any], view: MemoryView, ctx: OpContext) -> Outcome:
    if op.kind != "skill":
        raise KstarRefusal("KSTAR_BAD_OPERATION", "SKILL_OUTCOME takes a skill")
    outcome = doc.get("outcome")
    if not isinstance(outcome, bool):
        raise KstarRefusal("KSTAR_INVALID_RECORD", "outcome: true or false")
    skill_id = view.skill_ids.get(op.record_id)
    held = view.get("skill", skill_id) if skill_id else None
    if held is None:
        raise KstarRefusal("SKILL_NOT_FOUND", "no skill of that name in this memory")
    updated = canonical_doc(skills.apply_outcome(Skill.model_validate(held.doc), outcome, ctx.at_iso))
    return _stored("skill", str(updated["id"]), updated, name=op.record_id)


def _store(op: KstarPayload, doc: dict[str, Any], view: MemoryView, ctx: OpContext) -> Outcome:
    if op.kind not in RECORD_KINDS:
        raise KstarRefusal("KSTAR_BAD_OPERATION", f"STORE takes one of {', '.join(RECORD_KINDS)}")
    if len(op.document) > MAX_DOCUMENT:
        raise KstarRefusal("KSTAR_INVALID_RECORD", f"document larger than {MAX_DOCUMENT} characters")
    model = parse_record(op.kind, doc, ctx.at_iso)
    rid = _id_of(model)
    if rid != op.record_id:
        raise KstarRefusal("KSTAR_ID_MISMATCH", "recordId is not the record's id")
    name = ""
    if isinstance(model, Trace):
        domains.check_trace_categories(_categories(view), model)
    elif isinstance(model, Fact):
        domains.validate_fact(_schema(view, str(canonical_doc(model)["schema"])), model)
    elif isinstance(model, Skill):
        name = model.name
        other = view.skill_ids.get(name)
        if other is not None and other != rid:
            raise KstarRefusal("KSTAR_SKILL_NAME_TAKEN", "another skill of this memory has that name")
    elif isinstance(model, ControlToken):
        _check_token(op, model, view, ctx)
    stored = canonical_doc(model)
    held = view.get(op.kind, rid)
    if held is not None and held.content_hash != content_hash(stored):
        stored = _merge(op, stored, held)
    default = "OVERWRITE"
    if op.kind == "trace":
        default = "REFUSE:KSTAR_TRACE_IMMUTABLE"
    elif op.kind == "control_token":
        default = "REFUSE:TOKEN_EXISTS"
    return _put(op, stored, view, name=name, conflict=op.on_conflict if op.on_conflict != "DEFAULT" else default)


def _merge(op: KstarPayload, incoming: dict[str, Any], held: Held) -> dict[str, Any]:
    """An update keeps the record's first created_at (and a skill its maturity); a revocation sticks."""
    out = dict(incoming)
    if "created_at" in held.doc and op.kind in ("perception", "fact"):
        out["created_at"] = held.doc["created_at"]
    if op.kind == "skill" and op.origin == "LOCAL" and op.on_conflict == "DEFAULT" and "maturity" in held.doc:
        out["maturity"] = held.doc["maturity"]  # a new definition keeps what using the skill has taught
    if op.kind == "control_token" and held.doc.get("revoked"):
        for k in ("revoked", "revoked_at", "revocation_reason"):
            out[k] = held.doc.get(k)
    return out


def _put(op: KstarPayload, stored: dict[str, Any], view: MemoryView, name: str, conflict: str) -> Outcome:
    text = canonical_json(stored)
    h = "sha256:" + hashlib.sha256(text).hexdigest()
    rid = op.record_id if op.kind in REGISTRY_KINDS else str(_id_from_doc(op.kind, stored))
    held = view.get(op.kind, rid)
    if held is not None and held.content_hash == h:
        return Outcome("UNCHANGED", op.kind, rid, content_hash=h, name=name)
    if held is not None:
        if conflict == "KEEP":
            return Outcome("CONFLICT", op.kind, rid, content_hash=h, existing_hash=held.content_hash, name=name)
        if conflict.startswith("REFUSE:"):
            raise KstarRefusal(conflict.split(":", 1)[1], f"a {op.kind} with that id exists with other content")
    return _stored(op.kind, rid, stored, name, text)


def _check_token(op: KstarPayload, token: ControlToken, view: MemoryView, ctx: OpContext) -> None:
    parents = {}
    for pid in token.delegation_chain:
        held = view.get("control_token", pid)
        if held is not None:
            parents[pid] = ControlToken.model_validate(held.doc)
    types = dict(domains.BUILTIN_TOKEN_TYPES)
    for t in view.parsed("token_type", lambda h: domains.parse_token_type(h.doc)):
        types[t.name] = t
    at_ms = ctx.at_ms
    if op.origin != "LOCAL":
        # A moved memory keeps its history: a token is judged as at its grant, so a child whose parent
        # was revoked (or expired) since still imports, and fails verify_control_token as it should.
        at_ms = iso_to_ms(token.granted_at)
        parents = {k: p.model_copy(update={"revoked": False, "revoked_at": None, "revocation_reason": None})
                   for k, p in parents.items()}  # fmt: skip
    tokens.check_new_token(token, parents, types, at_ms)
    # Written here: the signer must be the writing claw's own issuer key, so no claw issues tokens in
    # another's name. An imported or synced token keeps its original issuer (the bundle's signature or
    # the sync's authentication vouches for where it came from); its signature is still checked above.
    if op.origin == "LOCAL" and not ctx.own_issuer(ctx.tenant, ctx.claw_id, token.signer_key):
        raise KstarRefusal("TOKEN_BAD_SIGNATURE", "Invalid signature: not signed by the writing claw's issuer key")


def _categories(view: MemoryView) -> list[domains.TraceCategory]:
    out: list[domains.TraceCategory] = view.parsed("trace_category", lambda h: domains.parse_category(h.doc))
    return out


def _schema(view: MemoryView, name: str) -> domains.DomainSchema | None:
    held = view.get("schema", name)
    if held is not None:
        return domains.DomainSchema(name, str(held.doc.get("version", "")), dict(held.doc["json_schema"]))
    return domains.BUILTIN_SCHEMAS.get(name)


def _id_of(model: BaseModel) -> str:
    return str(getattr(model, "token_id", None) or getattr(model, "id", ""))


def _id_from_doc(kind: str, doc: Mapping[str, Any]) -> str:
    return str(doc["token_id"] if kind == "control_token" else doc["id"])
