"""Judging one KMP ingest (seed 001 "kernel_ingest": the strict write path).

The kernel checks what the writer wrote; it never infers meaning. An ingest is refused whole
(one verdict, a reason code) when it is malformed:

1. ``EMPTY_INGEST``: no dimension, entry, relation or evidence.
2. ``DUPLICATE_INGEST``: the ingest id was used before in the about; ``DUPLICATE_REF``: an entry
   or evidence id used twice in the ingest, or already in the about
   (memory is append-only: a correction is a new entry with ``supersedes``/``corrects``).
3. ``UNKNOWN_DIMENSION``: an entry placed in a dimension neither declared now nor before.
4. ``UNKNOWN_REF``: evidence supporting an entry the about does not hold.
5. ``INVALID_VALIDITY``: ``validUntil`` before ``validFrom``.
6. ``REJECTED_RELATION``: a relation graded REJECTED (``governance/kmp/relations.py``).

Otherwise every relation keeps its grade (RICH, ANEMIC, STRUCTURAL or SUSPECT): a suspect relation
is stored and counted, a signal for the writer, not a failure. Refs may be qualified
``<about>#<id>``; a qualified ref to another about is an ``OTHER_ABOUT`` rejection.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass

from contracts.models import KmpIngestPayload
from governance.kmp.relations import Grade, RelationFacts, grade


@dataclass(frozen=True)
class KnownRefs:
    """What the about already holds, before this ingest."""

    refs: Set[str]  # entry and evidence ids
    dimensions: Set[str]


@dataclass(frozen=True)
class IngestRefusal:
    code: str
    detail: str


@dataclass(frozen=True)
class IngestVerdict:
    grades: tuple[Grade, ...]  # one per relation, in order
    context_seen: int  # context refs that resolve
    new_refs: tuple[str, ...]
    new_dimensions: tuple[str, ...]


def ingest_ref(ingest_id: str) -> str:
    return f"ingest:{ingest_id}"


def split_ref(ref: str, about: str) -> tuple[str | None, str]:
    """(the about a ref names, or None for this one; the local id)."""
    if "#" in ref:
        other, local = ref.split("#", 1)
        return (None if other == about else other), local
    return None, ref


def judge(p: KmpIngestPayload, known: KnownRefs) -> IngestVerdict | IngestRefusal:
    if not (p.dimensions or p.entries or p.relations or p.evidence):
        return IngestRefusal("EMPTY_INGEST", "the ingest holds no dimension, entry, relation or evidence")
    if ingest_ref(p.ingest_id) in known.refs:
        return IngestRefusal("DUPLICATE_INGEST", f"ingest {p.ingest_id!r} is already in about {p.about}")
    ids = [e.id for e in p.entries] + [v.id for v in p.evidence]
    seen: set[str] = set()
    for ref in ids:
        if ref in seen or ref in known.refs:
            where = "twice in this ingest" if ref in seen else f"already in about {p.about}"
            return IngestRefusal("DUPLICATE_REF", f"ref {ref!r} is {where}")
        seen.add(ref)
    dims = {d.id for d in p.dimensions} | set(known.dimensions)
    for e in p.entries:
        for c in e.coordinates:
            if c.dimension not in dims:
                return IngestRefusal("UNKNOWN_DIMENSION", f"entry {e.id!r}: dimension {c.dimension!r} is not declared")
        if e.valid_from is not None and e.valid_until is not None and e.valid_until < e.valid_from:
            return IngestRefusal("INVALID_VALIDITY", f"entry {e.id!r}: validUntil is before validFrom")
    all_refs = set(known.refs) | seen
    for v in p.evidence:
        for target in v.supports:
            if target not in all_refs:
                return IngestRefusal("UNKNOWN_REF", f"evidence {v.id!r} supports {target!r}, which is not in the about")
    context = set(p.context_refs)
    evidence_refs = {v.id for v in p.evidence} | set(known.refs)
    grades: list[Grade] = []
    for i, r in enumerate(p.relations):
        src_about, src = split_ref(r.source_ref, p.about)
        dst_about, dst = split_ref(r.target_ref, p.about)
        facts = RelationFacts(
            rel=r.rel, semantic_class=r.semantic_class, why=r.why.strip(), evidence_refs=tuple(r.evidence_refs),
            source_known=src_about is None and src in all_refs, target_known=dst_about is not None or dst in all_refs,
            target_about=dst_about, evidence_known=all(x in evidence_refs for x in r.evidence_refs),
            target_in_context=dst in context or dst in seen, self_loop=src_about is None and dst_about is None
            and src == dst,
        )  # fmt: skip
        g = grade(facts)
        if g.quality == "REJECTED":
            return IngestRefusal("REJECTED_RELATION", f"relation {i} ({r.rel} {r.source_ref} -> {r.target_ref}): "
                                 f"{g.reason}")  # fmt: skip
        grades.append(g)
    return IngestVerdict(
        grades=tuple(grades),
        context_seen=sum(1 for c in context if c in known.refs),
        new_refs=(ingest_ref(p.ingest_id), *ids),
        new_dimensions=tuple(sorted({d.id for d in p.dimensions} - set(known.dimensions))),
    )
