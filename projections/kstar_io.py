"""Moving a KSTAR memory in and out: export to a ``kstar-bundle``, import one, and the writes
both the HTTP API and the CLI publish (``kstar`` envelopes signed with the writing claw's key).

Export reads the read model; import never writes Postgres itself: it publishes one ``kstar``
operation per record (``origin`` IMPORT, ``originRef`` the bundle's checksum) and reports the
kstar processor's verdicts, so an import is on the log like any write and a replay rebuilds it.
Records whose content the memory already holds are not sent at all, and the processor judges a
record it already holds UNCHANGED, so importing a bundle twice (or again after a crash halfway)
changes nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg

from contracts.models import Envelope, KstarPayload
from governance.identity import TenantPolicy, derive_deployment_key
from governance.kstar import bundle as b
from governance.kstar.apply import content_hash
from governance.signing import HmacSigner
from producers.envelopes import build_envelope

Conn = psycopg.Connection[tuple[Any, ...]]
SECTION_KIND = {"traces": "trace", "perceptions": "perception", "facts": "fact", "skills": "skill",
                "control_tokens": "control_token"}  # fmt: skip
KIND_SECTION = {v: k for k, v in SECTION_KIND.items()}
REGISTRATIONS = ("schema", "trace_category", "token_type")
EXTENSION = "hivemem"  # the bundle's extensions.<this>: the memory's registrations


@dataclass(frozen=True)
class Writer:
    """Who writes: a claw of a tenant, signing with its deployment key."""

    tenant: str
    claw_id: str
    policy: TenantPolicy

    def envelope(self, payload: KstarPayload, idempotency_key: str | None = None) -> Envelope:
        secret_id, secret = next(iter(self.policy.operator_secrets.items()))
        signer = HmacSigner("hmac:" + secret_id, derive_deployment_key(secret, self.tenant, self.claw_id))
        return build_envelope("kstar", payload, tenant=self.tenant, claw_id=self.claw_id,
                              instance_id=f"{self.claw_id}-kstar", signer=signer,
                              idempotency_key=idempotency_key)  # fmt: skip


def document(record: Mapping[str, Any]) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def read_memory(conn: Conn, tenant: str, memory: str) -> Iterator[tuple[str, str, dict[str, Any], str]]:
    """(kind, record id, document, content hash) of every record of a memory, in key order."""
    with conn.cursor(name="kstar_export") as cur:  # server-side: a memory may hold millions of records
        cur.itersize = 5000
        cur.execute("SELECT kind, record_id, doc, content_hash FROM kstar.records WHERE tenant = %s AND memory = %s "
                    "ORDER BY kind, record_id", (tenant, memory))  # fmt: skip
        for kind, rid, doc, h in cur:
            yield str(kind), str(rid), dict(doc), str(h)


def export_memory(conn: Conn, tenant: str, memory: str, flt: b.ExportFilter, agent: b.Agent, exported_at: str,
                  signer: Any = None, passphrase: bytes | None = None,
                  progress: Callable[[int], None] | None = None) -> b.EncodedBundle:  # fmt: skip
    """The memory as a kstar-bundle 1.0.0 (signed when a signer is given, encrypted with a passphrase),
    serialised once."""
    sections: dict[str, list[dict[str, Any]]] = {s: [] for s in b.KINDS}
    registrations: list[dict[str, Any]] = []
    schemas: set[str] = set()
    seen = 0
    for kind, _, doc, _ in read_memory(conn, tenant, memory):
        seen += 1
        if progress is not None and seen % 1000 == 0:
            progress(1000)
        if kind in REGISTRATIONS:
            registrations.append({"kind": kind, "record": doc})
            continue
        section = KIND_SECTION.get(kind)
        if section is None or not flt.admits(section, doc):
            continue
        sections[section].append(doc)
        if kind == "fact":
            schemas.add(str(doc.get("schema", "")))
    if progress is not None:
        progress(seen % 1000)
    ext = {EXTENSION: {"memory": memory, "registrations": registrations}}
    return b.encode_bundle(
        agent, sections, sorted(schemas), exported_at, signer=signer, extensions=ext, passphrase=passphrase
    )


@dataclass
class ImportPlan:
    checksum: str
    ops: list[KstarPayload] = field(default_factory=list)
    unchanged: int = 0


def plan_import(conn: Conn, tenant: str, memory: str, bundle: Mapping[str, Any], mode: str,
                types: Sequence[str] | None = None, checksum: str | None = None) -> ImportPlan:  # fmt: skip
    """What to publish: registrations first (facts and traces are judged against them), then the
    records whose content differs from what the memory holds; with ``replace``, a FORGET of each
    imported kind first and every record after it."""
    if checksum is None:  # not verified by the caller (decode_bundle did it for the CLI and the API)
        checksum = b.verify_bundle(bundle).checksum
    held = {(k, r): h for k, r, _, h in read_memory(conn, tenant, memory)} if mode == "merge" else {}
    plan = ImportPlan(checksum)
    wanted = [s for s in b.KINDS if types is None or s in types]
    conflict = "KEEP" if mode == "merge" else "OVERWRITE"

    def add(op: str, kind: str, rid: str, doc: Mapping[str, Any] | None) -> None:
        text = document(doc) if doc is not None else "{}"
        h = content_hash(doc) if doc is not None else ""
        if doc is not None and held.get((kind, rid)) == h:
            plan.unchanged += 1
            return
        payload = KstarPayload(op_id=f"import-{checksum[7:23]}-{len(plan.ops)}", memory=memory, op=op,  # type: ignore[arg-type]
                               kind=kind, record_id=rid, document=text, on_conflict=conflict,  # type: ignore[arg-type]
                               origin="IMPORT", origin_ref=checksum)  # fmt: skip
        plan.ops.append(payload)

    if mode == "replace":
        # Only the kinds the bundle brings (or --types names): a default export carries no control
        # tokens, and replacing from it must not wipe the memory's tokens.
        for section in wanted:
            if types is not None or bundle["memory"][section]:
                add("FORGET", SECTION_KIND[section], "", None)
    ext = bundle.get("extensions", {}).get(EXTENSION, {})
    for reg in ext.get("registrations", []) if isinstance(ext, dict) else []:
        add("REGISTER", str(reg["kind"]), str(reg["record"]["name"]), reg["record"])
    for section in wanted:
        kind = SECTION_KIND[section]
        records = list(bundle["memory"][section])
        if kind == "control_token":  # parents before children: a delegated token is judged against its chain
            records.sort(key=lambda t: len(t.get("delegation_chain") or []))
        for rec in records:
            add("STORE", kind, str(rec["token_id"] if kind == "control_token" else rec["id"]), rec)
    return plan


@dataclass
class ImportResult:
    imported_count: int = 0  # STORED
    unchanged: int = 0  # already held (not sent, or judged UNCHANGED)
    conflicts: list[dict[str, str]] = field(default_factory=list)  # kept existing records
    refused: list[dict[str, str]] = field(default_factory=list)  # records the processor refused, with the code
    forgotten: int = 0
    pending: int = 0  # sent but not judged before the wait ran out

    def to_wire(self) -> dict[str, Any]:
        return {"importedCount": self.imported_count, "unchanged": self.unchanged, "conflicts": self.conflicts,
                "refused": self.refused, "forgotten": self.forgotten, "pending": self.pending}  # fmt: skip


def publish_all(publish_async: Callable[[Envelope, Callable[[Any, str | None], None]], None],
                flush: Callable[[float], int], envelopes: Sequence[Envelope],
                progress: Callable[[int], None] | None = None) -> None:  # fmt: skip
    """Send every envelope and wait for the broker's acks; raise if any was not taken."""
    errors: list[str] = []

    def done(pos: Any, err: str | None) -> None:
        if err is not None:
            errors.append(err)
        elif progress is not None:
            progress(1)

    for env in envelopes:
        publish_async(env, done)
    if flush(120.0) or errors:
        raise RuntimeError(f"Kafka did not take {len(errors) or 'some'} of the writes: {errors[:1]}")


def collect_verdicts(conn: Conn, tenant: str, event_ids: Sequence[str], wait_s: float,
                     progress: Callable[[int], None] | None = None) -> ImportResult:  # fmt: skip
    """Wait for the processor's verdict on each operation (history row or refusal) and tally them."""
    out = ImportResult()
    left = set(event_ids)
    deadline = time.monotonic() + wait_s
    while left:
        ids = list(left)
        rows = conn.execute(
            "SELECT envelope_event_id, change, kind, record_id FROM kstar.history WHERE tenant = %s "
            "AND envelope_event_id = ANY(%s)", (tenant, ids)).fetchall()  # fmt: skip
        rows += conn.execute(
            "SELECT event_id, 'REFUSED', reason_code, detail FROM audit.events WHERE tenant = %s "
            "AND event_id = ANY(%s) AND outcome = 'REJECTED'", (tenant, ids)).fetchall()  # fmt: skip
        for eid, change, kind, rid in rows:
            if eid not in left:
                continue
            left.discard(eid)
            if change == "STORED":
                out.imported_count += 1
            elif change == "UNCHANGED":
                out.unchanged += 1
            elif change == "CONFLICT":
                out.conflicts.append({"kind": str(kind), "recordId": str(rid), "kept": "existing"})
            elif change == "FORGOTTEN":
                out.forgotten += 1
            else:
                out.refused.append({"reasonCode": str(kind), "detail": str(rid)})
            if progress is not None:
                progress(1)
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    out.pending = len(left)
    return out
