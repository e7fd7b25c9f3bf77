"""The kstar processor: accepted ``kstar`` operations in; their outcomes (``hivemem.kstar.events``)
or refusals (``hivemem.rejected``) out. The rules are ``governance/kstar/apply.py``.

One verdict per operation. Its state is every memory's current records (``kstarproc.records``),
written in the batch's transaction, so an operation is judged against exactly what was logged
before it: a token's parents, a skill's maturity, a memory's registered schemas. All of a memory's
operations share one partition (key ``<tenant>/kstar:<memory>``), which keeps that order.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from contracts.kstar_records import KstarEvent, encode_kstar
from contracts.models import KstarPayload
from contracts.topics import TopicNames, key_partition
from governance.kstar.apply import REGISTRY_KINDS, Held, MemoryView, OpContext, Outcome, decide
from governance.kstar.records import KstarRefusal
from governance.kstar.tokens import issuer_key
from processors.accepted import AcceptedStage, decode_accepted
from streams.driver import ProcessorDriver
from streams.offsets import Conn
from streams.records import LogRecord, OutRecord

NAME = "kstar-processor"
STAGE = "kstar"
_NS = uuid.UUID("5d0f3b9e-8a41-4c57-b1a2-7e6c0d9f4a18")
Mem = tuple[str, str]  # tenant, memory


@dataclass
class Wanted:
    """What judging a batch needs of one memory."""

    keys: set[tuple[str, str]]  # (kind, record_id)
    skill_names: set[str]


@dataclass(frozen=True)
class StateRow:
    tenant: str
    memory: str
    kind: str
    record_id: str
    name: str
    doc: dict[str, Any]
    content_hash: str


class KstarState(Protocol):
    def load(self, wanted: dict[Mem, Wanted]) -> dict[Mem, MemoryView]:
        """The named records, the named skills and every registration of each memory."""

    def put(self, rows: Sequence[StateRow]) -> None: ...

    def forget(self, mem: Mem, kinds: Sequence[str]) -> None: ...


class InMemoryState:
    def __init__(self) -> None:
        self.rows: dict[tuple[str, str, str, str], StateRow] = {}

    def load(self, wanted: dict[Mem, Wanted]) -> dict[Mem, MemoryView]:
        out: dict[Mem, MemoryView] = {}
        for (t, m), w in wanted.items():
            view = out.setdefault((t, m), MemoryView())
            for r in self.rows.values():
                if (r.tenant, r.memory) != (t, m):
                    continue
                if (
                    (r.kind, r.record_id) in w.keys
                    or r.kind in REGISTRY_KINDS
                    or (r.kind == "skill" and r.name in w.skill_names)
                ):
                    _hold(view, r)
        return out

    def put(self, rows: Sequence[StateRow]) -> None:
        for r in rows:
            self.rows[(r.tenant, r.memory, r.kind, r.record_id)] = r

    def forget(self, mem: Mem, kinds: Sequence[str]) -> None:
        for k in [k for k in self.rows if k[:2] == mem and k[2] in kinds]:
            del self.rows[k]


class PostgresState:
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    def load(self, wanted: dict[Mem, Wanted]) -> dict[Mem, MemoryView]:
        keys = [(t, m, k, r) for (t, m), w in wanted.items() for k, r in w.keys]
        names = [(t, m, n) for (t, m), w in wanted.items() for n in w.skill_names]
        mems = list(wanted)
        cols = "SELECT s.tenant, s.memory, s.kind, s.record_id, s.name, s.doc, s.content_hash FROM kstarproc.records s "
        rows = self.conn.execute(
            cols + "JOIN unnest(%s::text[], %s::text[], %s::text[], %s::text[]) AS w(tenant, memory, kind, record_id) "
            "USING (tenant, memory, kind, record_id) UNION "
            + cols + "JOIN unnest(%s::text[], %s::text[], %s::text[]) AS w(tenant, memory, name) "
            "USING (tenant, memory, name) WHERE s.kind = 'skill' UNION "
            + cols + "JOIN unnest(%s::text[], %s::text[]) AS w(tenant, memory) USING (tenant, memory) "
            "WHERE s.kind = ANY(%s::text[])",
            ([k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys], [k[3] for k in keys],
             [n[0] for n in names], [n[1] for n in names], [n[2] for n in names],
             [m[0] for m in mems], [m[1] for m in mems], list(REGISTRY_KINDS)),
        ).fetchall()  # fmt: skip
        out: dict[Mem, MemoryView] = {m: MemoryView() for m in wanted}
        for t, m, k, r, n, doc, h in rows:
            row = StateRow(str(t), str(m), str(k), str(r), str(n), dict(doc), str(h))  # type: ignore[call-overload]
            _hold(out[(row.tenant, row.memory)], row)
        return out

    def put(self, rows: Sequence[StateRow]) -> None:
        last = {(r.tenant, r.memory, r.kind, r.record_id): r for r in rows}
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO kstarproc.records (tenant, memory, kind, record_id, name, doc, content_hash) "
                "VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s) ON CONFLICT (tenant, memory, kind, record_id) DO UPDATE "
                "SET name = excluded.name, doc = excluded.doc, content_hash = excluded.content_hash",
                [(r.tenant, r.memory, r.kind, r.record_id, r.name, json.dumps(r.doc), r.content_hash)
                 for r in last.values()],
            )  # fmt: skip

    def forget(self, mem: Mem, kinds: Sequence[str]) -> None:
        self.conn.execute("DELETE FROM kstarproc.records WHERE tenant = %s AND memory = %s AND kind = ANY(%s)",
                          (*mem, list(kinds)))  # fmt: skip


def _hold(view: MemoryView, r: StateRow) -> None:
    view.hold(r.kind, r.record_id, Held(r.doc, r.content_hash, r.name))


def _wanted_of(p: KstarPayload) -> tuple[set[tuple[str, str]], set[str]]:
    """The records an operation's judgement reads (a cheap look at its document, parsed properly later)."""
    keys: set[tuple[str, str]] = {(str(p.kind), p.record_id)} if p.record_id else set()
    names: set[str] = set()
    if p.op == "SKILL_OUTCOME":
        return set(), {p.record_id}
    try:
        doc = json.loads(p.document)
    except ValueError:
        return keys, names
    if isinstance(doc, dict):
        if p.kind == "skill" and isinstance(doc.get("name"), str):
            names.add(doc["name"])
        chain = doc.get("delegation_chain")
        if p.kind == "control_token" and isinstance(chain, list):
            keys.update(("control_token", str(c)) for c in chain[:256])
    return keys, names


def kstar_event_id(source: str) -> str:
    return str(uuid.uuid5(_NS, source))


@lru_cache(maxsize=4096)
def _issuer_public(secret: bytes, tenant: str, claw_id: str) -> str:
    raw = issuer_key(secret, tenant, claw_id).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return base64.b64encode(raw).decode()


class KstarProcessor(AcceptedStage[KstarState]):
    # State per memory (tenant, memory), read and written per batch in Postgres; a memory's operations share a
    # partition (their key), so its partitions may be split over instances (streams.group, HIVEMEM_INSTANCE).
    parallel = True
    name = NAME
    accepted = stage = STAGE

    def __init__(self, names: TopicNames, token_secret: bytes, store: KstarState | None = None) -> None:
        self.names = names
        self.secret = token_secret
        self.store = store or InMemoryState()

    def postgres(self, conn: Conn) -> KstarState:
        return PostgresState(conn)

    def own_issuer(self, tenant: str, claw_id: str, signer_key: str) -> bool:
        return _issuer_public(self.secret, tenant, claw_id) == signer_key

    def process(self, records: Sequence[LogRecord], now_ms: int) -> list[OutRecord]:
        decoded = decode_accepted(records, KstarPayload, self.stage)
        wanted: dict[Mem, Wanted] = {}
        for _, env, p in decoded:
            w = wanted.setdefault((env.tenant, p.memory), Wanted(set(), set()))
            keys, names = _wanted_of(p)
            w.keys.update(keys)
            w.skill_names.update(names)
        views = self.store.load(wanted) if wanted else {}
        outs: list[OutRecord] = []
        pending: list[StateRow] = []
        for rec, env, p in decoded:
            mem = (env.tenant, p.memory)
            ctx = OpContext(env.tenant, env.claw_id, rec.log_time(), self.own_issuer)
            try:
                outcome = decide(p, views[mem], ctx)
            except KstarRefusal as refusal:
                outs.append(self.rejected(rec, refusal.code, refusal.detail))
                continue
            if outcome.change == "FORGOTTEN":
                self.store.put(pending)  # the forget must see what this batch stored before it
                pending = []
                self.store.forget(mem, outcome.forget_kinds)
                views[mem].drop(outcome.forget_kinds)
            elif outcome.change == "STORED" and outcome.doc is not None:
                row = StateRow(env.tenant, p.memory, outcome.kind, outcome.record_id, outcome.name, outcome.doc,
                               outcome.content_hash)  # fmt: skip
                _hold(views[mem], row)
                pending.append(row)
            outs.append(self._event(rec, env.tenant, env.claw_id, env.trace_id, env.event_id, p, outcome))
        self.store.put(pending)
        return outs

    def _event(self, rec: LogRecord, tenant: str, claw_id: str, trace_id: str, envelope_event_id: str,
               p: KstarPayload, o: Outcome) -> OutRecord:  # fmt: skip
        source = str(rec.position)
        ev = KstarEvent(event_id=kstar_event_id(source), tenant=tenant, claw_id=claw_id, memory=p.memory,
                        at=rec.log_time(), source=source, trace_id=trace_id, envelope_event_id=envelope_event_id,
                        op_id=p.op_id, op=p.op, kind=o.kind, record_id=o.record_id, change=o.change,  # type: ignore[arg-type]
                        document=o.canonical,
                        content_hash=o.content_hash, existing_hash=o.existing_hash, name=o.name,
                        record_time=o.record_time, origin=p.origin, origin_ref=p.origin_ref,
                        forget_kinds=list(o.forget_kinds))  # fmt: skip
        key = f"{tenant}/kstar:{p.memory}".encode()
        return OutRecord(self.names.kstar_events, key_partition(key), key, encode_kstar(ev))


class KstarDriver(ProcessorDriver):
    """Run the kstar processor without a broker or a database; collect its outputs."""

    processor: KstarProcessor

    def __init__(self, names: TopicNames, token_secret: bytes) -> None:
        super().__init__(KstarProcessor(names, token_secret, InMemoryState()))
