"""The kmp processor: accepted ``kmp_ingest`` envelopes in; graded ingests (``INGESTED`` on
``hivemem.kmp.events``) or refusals out (rules: ``governance/kmp/ingest.py``).

One verdict per ingest. Its state is the set of refs (entry and evidence ids) and dimensions each
about holds (``kmpproc.refs``), written in the batch's transaction, so a relation's target is
judged against exactly what was logged before it. All of an about's writes share one partition
(key ``<tenant>/about:<about>``), which keeps that order.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Protocol

from contracts.kmp_records import KmpEvent, KmpGrade, encode_kmp
from contracts.models import KmpIngestPayload
from contracts.topics import TopicNames, key_partition
from governance.kmp.ingest import IngestRefusal, KnownRefs, ingest_ref, judge, split_ref
from processors.accepted import AcceptedStage, decode_accepted
from streams.driver import ProcessorDriver
from streams.offsets import Conn
from streams.records import LogRecord, OutRecord

NAME = "kmp-processor"
STAGE = "kmp"
_NS = uuid.UUID("0b6c7a52-93a4-4f0e-8d0c-4d1f5e2a7c31")
About = tuple[str, str]  # tenant, about


Wanted = dict[About, tuple[set[str], set[str]]]  # per about: (refs, dimensions) a batch asks about


class RefStore(Protocol):
    """Per about: its refs (entries, evidence, ingest ids) and its dimensions."""

    def known(self, wanted: Wanted) -> dict[About, KnownRefs]:
        """Which of the asked refs and dimensions each about holds (only those: an about may be large)."""

    def add(self, rows: Sequence[tuple[About, str, str]]) -> None:
        """(about, kind 'ref' or 'dimension', ref) rows."""


class InMemoryRefs:
    def __init__(self) -> None:
        self.rows: dict[About, set[tuple[str, str]]] = {}

    def known(self, wanted: Wanted) -> dict[About, KnownRefs]:
        out = {}
        for a, (refs, dims) in wanted.items():
            held = self.rows.get(a, set())
            out[a] = KnownRefs(frozenset(r for r in refs if ("ref", r) in held),
                               frozenset(d for d in dims if ("dimension", d) in held))  # fmt: skip
        return out

    def add(self, rows: Sequence[tuple[About, str, str]]) -> None:
        for a, k, r in rows:
            self.rows.setdefault(a, set()).add((k, r))


class PostgresRefs:
    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    def known(self, wanted: Wanted) -> dict[About, KnownRefs]:
        keys = [(a, "ref", r) for a, (refs, _) in wanted.items() for r in refs]
        keys += [(a, "dimension", d) for a, (_, dims) in wanted.items() for d in dims]
        found: dict[About, tuple[set[str], set[str]]] = {a: (set(), set()) for a in wanted}
        rows = self.conn.execute(
            "SELECT r.tenant, r.about, r.kind, r.ref FROM kmpproc.refs r JOIN unnest(%s::text[], %s::text[], "
            "%s::text[], %s::text[]) AS w(tenant, about, kind, ref) USING (tenant, about, kind, ref)",
            ([k[0][0] for k in keys], [k[0][1] for k in keys], [k[1] for k in keys], [k[2] for k in keys]),
        ).fetchall()  # fmt: skip
        for t, a, k, r in rows:
            found[(str(t), str(a))][0 if k == "ref" else 1].add(str(r))
        return {a: KnownRefs(frozenset(refs), frozenset(dims)) for a, (refs, dims) in found.items()}

    def add(self, rows: Sequence[tuple[About, str, str]]) -> None:
        # COPY then one INSERT: a batch brings thousands of refs, row-by-row inserts were its bottleneck.
        with self.conn.cursor() as cur:
            cur.execute("CREATE TEMP TABLE IF NOT EXISTS _kmp_refs AS SELECT * FROM kmpproc.refs WITH NO DATA")
            cur.execute("TRUNCATE _kmp_refs")
            with cur.copy("COPY _kmp_refs (tenant, about, kind, ref) FROM STDIN") as copy:
                for a, k, r in rows:
                    copy.write_row((*a, k, r))
            cur.execute("INSERT INTO kmpproc.refs SELECT * FROM _kmp_refs ON CONFLICT DO NOTHING")


def named_refs(p: KmpIngestPayload) -> set[str]:
    """Every ref of its own about an ingest names: what judging it needs to know exists."""
    refs = {ingest_ref(p.ingest_id), *p.context_refs, *(e.id for e in p.entries)}
    for v in p.evidence:
        refs.update([v.id, *v.supports])
    for r in p.relations:
        refs.update([split_ref(r.source_ref, p.about)[1], split_ref(r.target_ref, p.about)[1], *r.evidence_refs])
    return refs


def kmp_event_id(source: str) -> str:
    return str(uuid.uuid5(_NS, source))


class KmpProcessor(AcceptedStage[RefStore]):
    # State per case (tenant, about), read and written per batch in Postgres; a case's ingests share a
    # partition (their key), so its partitions may be split over instances (streams.group, HIVEMEM_INSTANCE).
    parallel = True
    name = NAME
    accepted, stage = "kmp_ingest", STAGE

    def __init__(self, names: TopicNames, store: RefStore | None = None) -> None:
        self.names = names
        self.store = store or InMemoryRefs()

    def postgres(self, conn: Conn) -> RefStore:
        return PostgresRefs(conn)

    def process(self, records: Sequence[LogRecord], now_ms: int) -> list[OutRecord]:
        decoded = decode_accepted(records, KmpIngestPayload, self.stage)
        # One read for the batch, of the refs it names; refs accepted earlier in the batch count for later records.
        wanted: Wanted = {}
        for _, env, p in decoded:
            refs, dims = wanted.setdefault((env.tenant, p.about), (set(), set()))
            refs.update(named_refs(p))
            dims.update([d.id for d in p.dimensions] + [c.dimension for e in p.entries for c in e.coordinates])
        known = self.store.known(wanted)
        held = {a: (set(k.refs), set(k.dimensions)) for a, k in known.items()}
        added: list[tuple[About, str, str]] = []
        outs: list[OutRecord] = []
        for rec, env, p in decoded:
            about = (env.tenant, p.about)
            verdict = judge(p, KnownRefs(held[about][0], held[about][1]))
            if isinstance(verdict, IngestRefusal):
                outs.append(self.rejected(rec, verdict.code, verdict.detail))
                continue
            held[about][0].update(verdict.new_refs)
            held[about][1].update(verdict.new_dimensions)
            added += [(about, "ref", r) for r in verdict.new_refs] + [(about, "dimension", d)
                                                                     for d in verdict.new_dimensions]  # fmt: skip
            source = str(rec.position)
            ev = KmpEvent(event_id=kmp_event_id(source), tenant=env.tenant, claw_id=env.claw_id, about=p.about,
                          at=rec.log_time(), source=source, trace_id=env.trace_id, envelope_event_id=env.event_id,
                          ingest=p, grades=[KmpGrade(quality=g.quality, reason=g.reason)  # type: ignore[arg-type]
                                            for g in verdict.grades],
                          context_seen=verdict.context_seen)  # fmt: skip
            key = f"{env.tenant}/about:{p.about}".encode()
            outs.append(OutRecord(self.names.kmp_events, key_partition(key), key, encode_kmp(ev)))
        if added:
            self.store.add(added)
        return outs


class KmpDriver(ProcessorDriver):
    """Run the kmp processor without a broker or a database; collect its outputs."""

    processor: KmpProcessor

    def __init__(self, names: TopicNames) -> None:
        super().__init__(KmpProcessor(names, InMemoryRefs()))
