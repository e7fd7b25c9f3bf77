"""Moving a KSTAR memory in and out: export to a ``kstar-bundle``, import one, and the writes
both the HTTP API and the CLI publish (``kstar`` envelopes signed with the writing claw's key).
The one implementation of export, import and a sync's push that ``hivemem export`` / ``import``
(hivemem/kstar_cli.py) and the routes ``/kstar/v1/export``, ``/import``, ``/apply`` run, each on a
connection it is given, bound to a tenant (the CLI's own, ``connect``; the API's from its pool of
synchronous connections, ``bind_tenant``): the waits for verdicts poll, so these run in a thread.

Export reads the read model; import never writes Postgres itself: it publishes one ``kstar``
operation per record (``origin`` IMPORT, ``originRef`` the bundle's checksum) and reports the
kstar processor's verdicts, so an import is on the log like any write and a replay rebuilds it.
Records whose content the memory already holds are not sent at all, and the processor judges a
record it already holds UNCHANGED, so importing a bundle twice (or again after a crash halfway)
changes nothing.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from contracts.models import ClamPayload, Envelope, EpisodePayload, KstarPayload, memory_id
from governance.identity import TenantPolicy, derive_deployment_key
from governance.kstar import bundle as b
from governance.kstar.apply import content_hash
from governance.signing import HmacSigner
from governance.transcripts import turns_from_layout
from producers.envelopes import build_envelope
from projections.queries import bind_tenant

Conn = psycopg.Connection[tuple[Any, ...]]
Tick = Callable[[int], None]
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

    def envelope(self, payload: KstarPayload | EpisodePayload | ClamPayload,
                 idempotency_key: str | None = None) -> Envelope:  # fmt: skip
        secret_id, secret = next(iter(self.policy.operator_secrets.items()))
        signer = HmacSigner("hmac:" + secret_id, derive_deployment_key(secret, self.tenant, self.claw_id))
        kind = {KstarPayload: "kstar", EpisodePayload: "episode", ClamPayload: "clam"}[type(payload)]
        return build_envelope(kind, payload, tenant=self.tenant, claw_id=self.claw_id,
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


def read_episodes(conn: Conn, tenant: str, claw_id: str) -> list[dict[str, Any]]:
    """The claw's KMMS episodes (every user's memory inside it; erased ones left out), as they read now
    (personal data already redacted by the tenant's policy), oldest first."""
    rows = conn.execute(
        "SELECT episode_id, scope, session_id, thread_id, content_type, occurred_at, content, turn_layout "
        "FROM kmms.kmms_episodes WHERE tenant = %s AND claw_id = %s AND NOT erased ORDER BY occurred_at, episode_id",
        (tenant, claw_id),
    ).fetchall()  # fmt: skip
    # A conversation's turns travel as their layout over its content (``turn_layout``): an import cuts the same rounds.
    return [{"episode_id": e, "user_id": u, "session_id": s, "thread_id": t, "content_type": k, "occurred_at": o,
             "content": c, **({"turn_layout": lay} if lay else {})} for e, u, s, t, k, o, c, lay in rows]  # fmt: skip


def export_memory(conn: Conn, tenant: str, memory: str, flt: b.ExportFilter, agent: b.Agent, exported_at: str,
                  signer: Any = None, passphrase: bytes | None = None,
                  progress: Callable[[int], None] | None = None, episodes: bool = True) -> b.EncodedBundle:  # fmt: skip
    """The memory as a kstar-bundle 1.0.0 (signed when a signer is given, encrypted with a passphrase),
    serialised once. Exporting a claw's own memory also carries its KMMS episodes (``episodes``), in
    ``extensions.hivemem.kmms_episodes``: an import tells them again, and KMMS consolidates them anew."""
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
    ext: dict[str, Any] = {EXTENSION: {"memory": memory, "registrations": registrations}}
    if episodes and "/" not in memory:  # the claw's own memory: its id is the claw's
        ext[EXTENSION]["kmms_episodes"] = read_episodes(conn, tenant, memory)
    return b.encode_bundle(
        agent, sections, sorted(schemas), exported_at, signer=signer, extensions=ext, passphrase=passphrase
    )


@dataclass
class ImportPlan:
    checksum: str
    ops: list[KstarPayload] = field(default_factory=list)
    unchanged: int = 0
    episodes: list[EpisodePayload] = field(default_factory=list)  # KMMS episodes to tell again


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
    if not isinstance(ext, dict):
        ext = {}
    if types is None or "episodes" in types:
        plan.episodes = [episode_payload(e, memory) for e in ext.get("kmms_episodes", [])]
    for reg in ext.get("registrations", []):
        add("REGISTER", str(reg["kind"]), str(reg["record"]["name"]), reg["record"])
    for section in wanted:
        kind = SECTION_KIND[section]
        records = list(bundle["memory"][section])
        if kind == "control_token":  # parents before children: a delegated token is judged against its chain
            records.sort(key=lambda t: len(t.get("delegation_chain") or []))
        for rec in records:
            add("STORE", kind, str(rec["token_id"] if kind == "control_token" else rec["id"]), rec)
    return plan


def episode_payload(e: Mapping[str, Any], memory: str) -> EpisodePayload:
    """A bundle's episode as the importing claw tells it (its own memory: ``memory:<claw>/<user>``)."""
    claw = memory.split("/", 1)[0]
    try:
        content, layout = str(e["content"]), e.get("turn_layout") or []
        turns = turns_from_layout(content, layout) if isinstance(layout, list) else []
        if layout and not turns:
            raise ValueError(f"episode {e['episode_id']}: its turn_layout does not lay out its content")
        return EpisodePayload(episode_id=str(e["episode_id"]), about=memory_id(claw, str(e.get("user_id", ""))),
                              content=content, occurred_at=int(e["occurred_at"]), turns=turns,
                              session_id=str(e.get("session_id", "")), user_id=str(e.get("user_id", "")),
                              thread_id=str(e.get("thread_id", "")),
                              content_type=e.get("content_type", "NOTE"))  # fmt: skip
    except (KeyError, TypeError, ValueError) as exc:
        raise b.BundleError("BUNDLE_BAD_FORMAT", f"extensions.hivemem.kmms_episodes: {exc}"[:300]) from exc


@dataclass
class ImportResult:
    imported_count: int = 0  # STORED
    unchanged: int = 0  # already held (not sent, or judged UNCHANGED)
    conflicts: list[dict[str, str]] = field(default_factory=list)  # kept existing records
    refused: list[dict[str, str]] = field(default_factory=list)  # records the processor refused, with the code
    forgotten: int = 0
    pending: int = 0  # sent but not judged before the wait ran out
    episodes: dict[str, int] = field(default_factory=dict)  # KMMS: imported, unchanged, refused, pending

    def to_wire(self) -> dict[str, Any]:
        return {"importedCount": self.imported_count, "unchanged": self.unchanged, "conflicts": self.conflicts,
                "refused": self.refused, "forgotten": self.forgotten, "pending": self.pending,
                "episodes": self.episodes}  # fmt: skip


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


def collect_episode_verdicts(conn: Conn, tenant: str, event_ids: Sequence[str], wait_s: float) -> dict[str, int]:
    """KMMS's verdict on each told episode: stored, or refused (the same content already in that memory
    counts as unchanged: a second import tells nothing new)."""
    out = {"imported": 0, "unchanged": 0, "refused": 0, "pending": 0}
    left = set(event_ids)
    deadline = time.monotonic() + wait_s
    while left:
        ids = list(left)
        stored = conn.execute("SELECT envelope_event_id FROM kmms.kmms_episodes WHERE tenant = %s "
                              "AND envelope_event_id = ANY(%s)", (tenant, ids)).fetchall()  # fmt: skip
        refused = conn.execute("SELECT event_id, reason_code FROM audit.events WHERE tenant = %s "
                               "AND event_id = ANY(%s) AND outcome = 'REJECTED'", (tenant, ids)).fetchall()  # fmt: skip
        for (eid,) in stored:
            if eid in left:
                left.discard(eid)
                out["imported"] += 1
        for eid, code in refused:
            if eid in left:
                left.discard(eid)
                out["unchanged" if code in ("DUPLICATE_CONTENT", "DUPLICATE_EPISODE", "DUPLICATE") else "refused"] += 1
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    out["pending"] = len(left)
    return out


def connect(db_url: str, tenant: str) -> Conn:
    """A connection of the CLI's for one export or import, bound to ``tenant`` for the session."""
    conn = psycopg.connect(db_url)
    bind_tenant(conn, tenant)
    return conn


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def export_document(conn: Conn, tenant: str, memory: str, flt: b.ExportFilter, signer: Any,
                    passphrase: str | None, progress: Tick | None = None,
                    episodes: bool = True) -> b.EncodedBundle:  # fmt: skip
    """The memory's bundle and its file bytes (encrypted when a passphrase is given)."""
    return export_memory(conn, tenant, memory, flt, b.Agent(memory, "claw", "hivemem-0.1.0"), now_iso(),
                         signer=signer, passphrase=passphrase.encode() if passphrase else None,
                         progress=progress, episodes=episodes)  # fmt: skip


def progress_totals(plan: ImportPlan) -> tuple[int, int]:
    """What an import's two bars count to: every envelope it sends (the records that differ, the
    registrations and removals before them, the KMMS episodes told again), and the ones the kstar
    processor judges (all but the episodes, which KMMS answers). Unchanged records are not sent."""
    return len(plan.ops) + len(plan.episodes), len(plan.ops)


def import_document(conn: Conn, writer: Writer, memory: str, plain: dict[str, Any], mode: str,
                    types: Sequence[str] | None, publisher: Any, wait_s: float,
                    sent: Tick | None = None, judged: Tick | None = None,
                    checksum: str | None = None,
                    totals: Callable[[int, int], None] | None = None) -> ImportResult:  # fmt: skip
    """Verify (unless ``checksum`` says it was), plan, publish, and wait for the verdicts; the report
    counts what was not sent as unchanged. ``totals`` hears what ``sent`` and ``judged`` will count
    to, once the plan is made. ``conn`` is bound to the writer's tenant (``connect``)."""
    plan = plan_import(conn, writer.tenant, memory, plain, mode, types, checksum)
    conn.commit()  # not rollback: that would undo the tenant setting too
    if totals is not None:
        totals(*progress_totals(plan))
    envs = [writer.envelope(p) for p in plan.ops]
    told = [writer.envelope(e) for e in plan.episodes]
    publish_all(publisher.publish_async, publisher.flush, envs + told, sent)
    result = collect_verdicts(conn, writer.tenant, [e.event_id for e in envs], wait_s, judged)
    if told:
        result.episodes = collect_episode_verdicts(conn, writer.tenant, [e.event_id for e in told], wait_s)
    result.unchanged += plan.unchanged
    return result


def apply_records(conn: Conn, writer: Writer, memory: str, records: Sequence[dict[str, Any]], origin_ref: str,
                  publisher: Any, wait_s: float) -> ImportResult:  # fmt: skip
    """A sync's push arriving: each record stored (origin SYNC, overwriting)."""
    envs = []
    for i, item in enumerate(records):
        kind, rec = str(item.get("kind")), item.get("record")
        if kind not in ("trace", "perception", "fact", "skill", "control_token") or not isinstance(rec, dict):
            raise b.BundleError("KSTAR_INVALID_RECORD", f"records[{i}]: {{kind, record}} with a KSTAR kind")
        rid = str(rec.get("token_id") if kind == "control_token" else rec.get("id"))
        payload = KstarPayload(op_id=f"apply-{i}", memory=memory, op="STORE", kind=kind, record_id=rid,  # type: ignore[arg-type]
                               document=document(rec), on_conflict="OVERWRITE", origin="SYNC",
                               origin_ref=origin_ref[:1024])  # fmt: skip
        envs.append(writer.envelope(payload))
    publish_all(publisher.publish_async, publisher.flush, envs)
    return collect_verdicts(conn, writer.tenant, [e.event_id for e in envs], wait_s)


# ---------------------------------------------------------------------------------------------- bundle files


def read_document(path: Path, passphrase: bytes | None = None, max_bytes: int = b.DEFAULT_MAX_BYTES) -> dict[str, Any]:
    """``b.load_document`` of a file; the size is checked before reading it."""
    size = path.stat().st_size
    if size > max_bytes:
        raise b.BundleError("BUNDLE_TOO_LARGE", f"{path} is {size} bytes, the limit is {max_bytes}")
    return b.load_document(path.read_bytes(), passphrase, max_bytes)


def write_document(path: Path, data: bytes) -> None:
    """Write bundle bytes atomically, mode 600: a bundle is the user's whole memory (seed §11.1)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
