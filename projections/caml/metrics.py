"""CAML's Prometheus metrics (seed 000 §10.3, names exactly as the seed gives them; X-20).

Every value is computed at scrape time from the CAML read model through the SECURITY DEFINER
functions of migration 12 (``projections/caml/metrics_migration.py``): the writes are judged in
the caml processor, another process, and the read model is the log's fold, so the numbers are
the same whichever API process answers and survive restarts. ``/metrics`` awaits ``read_snapshot``
and hands it to ``CamlCollector.update``; ``generate_latest`` then calls ``collect``.

Exposed (labels in brackets; a missing type or domain is "none", a recall over every domain "all"):
- ``caml_writes_total`` [operation OBSERVE|VALIDATE, outcome ACCEPTED|REFUSED, type, domain]
- ``caml_write_latency_ms`` histogram [operation, outcome]: the caml processor's time to judge
- ``caml_recalls_total`` [outcome, domain]; ``caml_recall_latency_ms`` histogram
- ``caml_pii_rejections_total`` [stage regex|ner|llm|local-rule|cache]
- ``caml_pii_scan_latency_ms`` histogram [stage: the deepest stage run]: the judging time of the
  observations whose content was scanned (the checks before the scan are in-memory, so the scan
  dominates; the audit entry does not time the scan alone)
- ``caml_reputation_score`` histogram over the deployments' current scores (buckets 0, 10, ..., 100)
- ``caml_reputation_events_total`` [reason]
- ``caml_active_observations`` gauge [type, domain]: active and not expired now
- ``caml_active_deployments`` gauge: deployments with a reputation row that are not suspended
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString
from psycopg import AsyncConnection

LATENCY_BUCKETS_MS: tuple[float, ...] = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500)
SCORE_BUCKETS: tuple[float, ...] = tuple(float(b) for b in range(0, 101, 10))
WRITE_OPERATIONS = ("OBSERVE", "VALIDATE")
PII_REJECTED = "PII_REJECTED"
HELP = {
    "caml_writes_total": "CAML observe and validate envelopes judged",
    "caml_write_latency_ms": "Time the caml processor took to judge a write (ms)",
    "caml_recalls_total": "CAML recalls served",
    "caml_recall_latency_ms": "CAML recall latency in the API (ms)",
    "caml_pii_rejections_total": "Observations refused for personal data, by the stage that hit",
    "caml_pii_scan_latency_ms": "Judging time of observations whose content was PII-scanned (ms)",
    "caml_reputation_score": "Current reputation scores of the deployments",
    "caml_reputation_events_total": "Reputation changes, by reason",
    "caml_active_observations": "Observations active and not expired now",
    "caml_active_deployments": "Deployments with a reputation that are not suspended",
}


class AuditRow(NamedTuple):
    operation: str
    outcome: str
    observation_type: str | None
    domain: str | None
    reason_code: str | None
    pii_stage: str | None
    scan_depth: str | None  # the deepest PII stage run; None: the content was not scanned
    bucket: int  # index into LATENCY_BUCKETS_MS; len(LATENCY_BUCKETS_MS) is +Inf
    n: int
    latency_sum: float


class ReputationRow(NamedTuple):
    suspended: bool
    bucket: int  # index into SCORE_BUCKETS
    n: int
    score_sum: float


@dataclass(frozen=True)
class CamlSnapshot:
    audit: tuple[AuditRow, ...] = ()
    reputation: tuple[ReputationRow, ...] = ()
    rep_events: tuple[tuple[str, int], ...] = ()  # (reason, count)
    active: tuple[tuple[str, str, int], ...] = ()  # (type, domain, count)


async def read_snapshot(conn: AsyncConnection[Any]) -> CamlSnapshot:
    """Read every CAML aggregate through migration 12's functions (as the application role)."""
    lat, score = list(LATENCY_BUCKETS_MS), list(SCORE_BUCKETS)
    audit = await (await conn.execute("SELECT * FROM hivemem.caml_audit_summary(%s::float8[])", (lat,))).fetchall()
    rep = await (await conn.execute("SELECT * FROM hivemem.caml_reputation_summary(%s::float8[])", (score,))).fetchall()
    events = await (await conn.execute("SELECT reason, n FROM hivemem.caml_rep_event_counts()")).fetchall()
    active = await (await conn.execute("SELECT * FROM hivemem.caml_active_observations()")).fetchall()
    return CamlSnapshot(
        audit=tuple(
            AuditRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], int(r[7]), int(r[8]), float(r[9] or 0.0)) for r in audit
        ),
        reputation=tuple(ReputationRow(bool(r[0]), int(r[1]), int(r[2]), float(r[3] or 0.0)) for r in rep),
        rep_events=tuple((str(r[0]), int(r[1])) for r in events),
        active=tuple((str(r[0]), str(r[1]), int(r[2])) for r in active),
    )


@dataclass
class _Hist:
    """One histogram series being summed: per-bucket (not cumulative) counts and the sum."""

    counts: list[int]
    total: float = 0.0

    def add(self, bucket: int, n: int, value_sum: float) -> None:
        self.counts[min(max(bucket, 0), len(self.counts) - 1)] += n
        self.total += value_sum


@dataclass
class _Series:
    bounds: tuple[float, ...]
    by_labels: dict[tuple[str, ...], _Hist] = field(default_factory=dict)

    def add(self, labels: tuple[str, ...], bucket: int, n: int, value_sum: float) -> None:
        if labels not in self.by_labels:
            self.by_labels[labels] = _Hist([0] * (len(self.bounds) + 1))
        self.by_labels[labels].add(bucket, n, value_sum)


def _histogram(name: str, labels: Sequence[str], series: _Series) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, HELP[name], labels=list(labels))
    les = [floatToGoString(b) for b in series.bounds] + ["+Inf"]
    for values, h in sorted(series.by_labels.items()):
        cumulative, running = [], 0
        for le, count in zip(les, h.counts, strict=True):
            running += count
            cumulative.append((le, float(running)))
        family.add_metric(list(values), cumulative, h.total)
    return family


def _counter(name: str, labels: Sequence[str], counts: dict[tuple[str, ...], int]) -> CounterMetricFamily:
    # CounterMetricFamily drops a trailing "_total" from the name and the exposition adds it back.
    family = CounterMetricFamily(name, HELP[name], labels=list(labels))
    for values, n in sorted(counts.items()):
        family.add_metric(list(values), float(n))
    return family


def families(snap: CamlSnapshot) -> list[Metric]:
    """The ten CAML metric families of one snapshot."""
    writes: dict[tuple[str, ...], int] = defaultdict(int)
    recalls: dict[tuple[str, ...], int] = defaultdict(int)
    pii: dict[tuple[str, ...], int] = defaultdict(int)
    write_lat, recall_lat = _Series(LATENCY_BUCKETS_MS), _Series(LATENCY_BUCKETS_MS)
    scan_lat = _Series(LATENCY_BUCKETS_MS)
    recall_lat.add((), 0, 0, 0.0)  # unlabelled series are present (at zero) before the first record
    for r in snap.audit:
        if r.operation in WRITE_OPERATIONS:
            writes[(r.operation, r.outcome, r.observation_type or "none", r.domain or "none")] += r.n
            write_lat.add((r.operation, r.outcome), r.bucket, r.n, r.latency_sum)
        elif r.operation == "RECALL":
            recalls[(r.outcome, r.domain or "all")] += r.n
            recall_lat.add((), r.bucket, r.n, r.latency_sum)
        if r.reason_code == PII_REJECTED:
            pii[(r.pii_stage or "unknown",)] += r.n
        if r.scan_depth:
            scan_lat.add((r.scan_depth,), r.bucket, r.n, r.latency_sum)
    scores = _Series(SCORE_BUCKETS)
    scores.add((), 0, 0, 0.0)
    for rep in snap.reputation:
        scores.add((), rep.bucket, rep.n, rep.score_sum)
    active_obs = GaugeMetricFamily(
        "caml_active_observations", HELP["caml_active_observations"], labels=["type", "domain"]
    )
    for kind, domain, n in sorted(snap.active):
        active_obs.add_metric([kind, domain], float(n))
    active_deployments = sum(rep.n for rep in snap.reputation if not rep.suspended)
    rep_events: dict[tuple[str, ...], int] = {(reason,): n for reason, n in snap.rep_events}
    return [
        _counter("caml_writes_total", ["operation", "outcome", "type", "domain"], writes),
        _histogram("caml_write_latency_ms", ["operation", "outcome"], write_lat),
        _counter("caml_recalls_total", ["outcome", "domain"], recalls),
        _histogram("caml_recall_latency_ms", [], recall_lat),
        _counter("caml_pii_rejections_total", ["stage"], pii),
        _histogram("caml_pii_scan_latency_ms", ["stage"], scan_lat),
        _histogram("caml_reputation_score", [], scores),
        _counter("caml_reputation_events_total", ["reason"], rep_events),
        active_obs,
        GaugeMetricFamily("caml_active_deployments", HELP["caml_active_deployments"], value=float(active_deployments)),
    ]


class CamlCollector(Collector):
    """Serves the latest snapshot; none before the first successful read (no data is not zero)."""

    def __init__(self) -> None:
        self._snapshot: CamlSnapshot | None = None

    def update(self, snapshot: CamlSnapshot) -> None:
        self._snapshot = snapshot  # one reference swap: a concurrent scrape sees the old or the new

    def describe(self) -> Iterable[Metric]:
        # The names, for the registry's duplicate check (families without samples).
        return [Metric(f.name, f.documentation, f.type) for f in families(CamlSnapshot())]

    def collect(self) -> Iterator[Metric]:
        snap = self._snapshot
        if snap is not None:
            yield from families(snap)
