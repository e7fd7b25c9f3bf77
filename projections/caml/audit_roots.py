"""Daily Merkle roots over CAML's audit entries (seed 000 §10.2, X-32), and their verification.

A tenant's tree for a UTC day (by the audit record's broker log time) has one leaf per entry,
in log order (log time, then topic, partition, offset): SHA-256(0x00 ‖ canonical JSON of the
entry). Roots are RFC 6962 tree heads; a root of the first ``size`` leaves stays valid as
the day grows (the tree is append-only), so a root published before the day ends is a
checkpoint and the 03:00 UTC root of the previous day is final. The global root of a day is
the tree over its tenant roots, ordered by tenant name.

``compute_roots`` reads the read model (what the API proves against); ``verify`` recomputes
everything from the log itself and reports any entry that was altered, removed or added in
the read model, and any published root that the log does not reproduce.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import psycopg

from contracts.caml_records import CamlAuditEntry, CamlMerkleRoot, decode_caml
from governance.caml.merkle import root
from projections.caml.read_model import ENTRY_COLUMNS, audit_day, audit_leaf, entry_from_row
from streams.records import LogRecord

GLOBAL = "_global"
Leaves = dict[tuple[str, str], list[tuple[str, bytes]]]  # (tenant, day) -> [(position, leaf hash)]


def roots_of(leaves: Leaves, day: str, computed_at: int) -> list[CamlMerkleRoot]:
    """The tenant roots of ``day`` and the global root over them."""
    tenants = sorted(t for t, d in leaves if d == day)
    out = []
    for tenant in tenants:
        hashes = [h for _, h in leaves[(tenant, day)]]
        out.append(CamlMerkleRoot(day=day, scope=tenant, size=len(hashes), root=root(hashes).hex(),
                                  computed_at=computed_at))  # fmt: skip
    if out:
        tenant_roots = [bytes.fromhex(r.root) for r in out]
        out.append(CamlMerkleRoot(day=day, scope=GLOBAL, size=len(out), root=root(tenant_roots).hex(),
                                  computed_at=computed_at))  # fmt: skip
    return out


def read_model_leaves(conn: psycopg.Connection[tuple[object, ...]], day: str) -> Leaves:
    leaves: Leaves = defaultdict(list)
    rows: Any = conn.execute(
        f"SELECT log_topic, log_partition, log_offset, {ENTRY_COLUMNS} FROM caml.caml_audit_log "
        "WHERE day = %s::date ORDER BY tenant, log_time, log_topic, log_partition, log_offset",
        (day,),
    )
    for topic, partition, offset, *entry in rows:
        e = entry_from_row(tuple(entry))  # the leaf of what the row says now, not its stored hash
        leaves[(e.tenant, day)].append((f"{topic}:{partition}:{offset}", audit_leaf(e)))
    return leaves


def compute_roots(conn: psycopg.Connection[tuple[object, ...]], day: str) -> list[CamlMerkleRoot]:
    return roots_of(read_model_leaves(conn, day), day, int(time.time() * 1000))


def log_leaves(records: Iterable[LogRecord]) -> Leaves:
    """Leaves recomputed from the audit topic's records themselves."""
    rows: dict[tuple[str, str], list[tuple[tuple[int, str, int, int], str, bytes]]] = defaultdict(list)
    for rec in records:
        entry = decode_caml(rec.value or b"", CamlAuditEntry)
        order = (rec.timestamp, rec.topic, rec.partition, rec.offset)
        rows[(entry.tenant, audit_day(rec.timestamp))].append((order, str(rec.position), audit_leaf(entry)))
    return {k: [(pos, leaf) for _, pos, leaf in sorted(v)] for k, v in rows.items()}


@dataclass
class VerifyReport:
    days: list[str]
    entries: int = 0
    roots_checked: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(log: Leaves, stored: Leaves, published: list[CamlMerkleRoot], days: list[str] | None) -> VerifyReport:
    """Compare the read model's entries and every published root with what the log gives."""
    wanted = sorted({d for _, d in log} | {d for _, d in stored} | {r.day for r in published})
    if days:
        wanted = [d for d in wanted if d in days]
    report = VerifyReport(wanted)
    for day in wanted:
        for tenant in sorted({t for t, d in log if d == day} | {t for t, d in stored if d == day}):
            from_log = dict(log.get((tenant, day), []))
            in_db = dict(stored.get((tenant, day), []))
            report.entries += len(from_log)
            for pos, leaf in from_log.items():
                if pos not in in_db:
                    report.problems.append(f"{day} {tenant}: entry {pos} is missing from caml_audit_log")
                elif in_db[pos] != leaf:
                    report.problems.append(f"{day} {tenant}: entry {pos} was altered in caml_audit_log")
            for pos in in_db.keys() - from_log.keys():
                report.problems.append(f"{day} {tenant}: caml_audit_log has entry {pos}, which the log does not")
        for r in (r for r in published if r.day == day):
            report.roots_checked += 1
            if r.scope == GLOBAL:
                heads = _tenant_heads(published, day, r.computed_at)
                expected = root(heads[: r.size]).hex() if len(heads) >= r.size else None
            else:
                hashes = [h for _, h in log.get((r.scope, day), [])]
                expected = root(hashes[: r.size]).hex() if len(hashes) >= r.size else None
            if expected != r.root:
                report.problems.append(f"{day} {r.scope}: published root of size {r.size} does not match the log")
    return report


def _tenant_heads(published: list[CamlMerkleRoot], day: str, computed_at: int) -> list[bytes]:
    """The global tree's leaves: the tenant roots computed in the same run, by tenant (each of
    them is checked against the log on its own)."""
    same = {r.scope: r for r in published if r.day == day and r.scope != GLOBAL and r.computed_at == computed_at}
    return [bytes.fromhex(same[t].root) for t in sorted(same)]
