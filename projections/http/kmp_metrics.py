"""What KMP makes observable (seed 001 E-19): per call, its operation, the scope it read, how many refs
it returned, how long it took; the confidence of each ask; the relation quality of each write and how
long it took to become queryable. Prometheus metrics on the API's /metrics and one structured log
line per call (logger ``hivemem.kmp``) — never the content, only ids and counts."""

from __future__ import annotations

import json
import logging
import time

from prometheus_client import CollectorRegistry, Counter, Histogram

log = logging.getLogger("hivemem.kmp")


class KmpMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.calls = Counter("hivemem_kmp_calls", "KMP calls", ["op", "scope", "outcome"], registry=registry)
        self.seconds = Histogram("hivemem_kmp_call_seconds", "KMP call latency", ["op"], registry=registry,
                                 buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5))  # fmt: skip
        self.refs = Histogram("hivemem_kmp_refs_returned", "Refs a KMP read returned", ["op"], registry=registry,
                              buckets=(0, 1, 5, 10, 25, 50, 100, 200))  # fmt: skip
        self.answers = Counter("hivemem_kmp_answers", "KMP ask answers by confidence", ["confidence"],
                               registry=registry)  # fmt: skip
        self.relations = Counter("hivemem_kmp_relations_written", "Relations written through this API by grade",
                                 ["quality"], registry=registry)  # fmt: skip
        self.queryable = Histogram("hivemem_kmp_write_to_queryable_seconds",
                                   "From publishing an ingest to its verdict in the read model", registry=registry,
                                   buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5))  # fmt: skip

    def record(self, op: str, tenant: str, about: str | None, started: float, *, scope: str = "CURRENT_ABOUT",
               refs: int = 0, outcome: str = "ok", **extra: object) -> None:  # fmt: skip
        took = time.perf_counter() - started
        self.calls.labels(op, scope, outcome).inc()
        self.seconds.labels(op).observe(took)
        self.refs.labels(op).observe(refs)
        log.info(json.dumps({"op": op, "tenant": tenant, "about": about, "scope": scope, "refs": refs,
                             "outcome": outcome, "tookMs": round(took * 1000, 2), **extra}, default=str))  # fmt: skip
