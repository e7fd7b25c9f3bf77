"""CAML metrics on /metrics: an accepted observe, a PII-refused observe and a recall move the ten
seed-named metrics (computed at scrape time from the read model the caml projection folds)."""

from __future__ import annotations

import uuid

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from hivemem.stack import Stack
from producers.caml_client import CamlError
from tests.conftest import wait_until
from tests.integration.caml_support import ANOMALY_PATTERN, anomaly, caml, evidence

pytestmark = pytest.mark.integration

Samples = list[tuple[str, dict[str, str], float]]
HISTOGRAMS = ("caml_write_latency_ms", "caml_recall_latency_ms", "caml_pii_scan_latency_ms", "caml_reputation_score")


def scrape(stack: Stack) -> tuple[str, Samples]:
    r = httpx.get(f"{stack.api_url}/metrics", timeout=30)  # no token: /metrics is open, like /healthz
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    samples = [(s.name, s.labels, s.value) for f in text_string_to_metric_families(r.text) for s in f.samples]
    return r.text, samples


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels`` (0 when there are none)."""
    return sum(v for n, ls, v in samples if n == name and labels.items() <= ls.items())


def test_observe_pii_refusal_and_recall_move_the_caml_metrics(stack: Stack) -> None:
    _, before = scrape(stack)
    tag = uuid.uuid4().hex[:8]
    author = caml(stack, "caml-b")
    anomaly(author, f"Freight {tag} invoices from the coastal depot are matched twice by the ERP import")
    leaker = caml(stack, "caml-b")
    with pytest.raises(CamlError) as refused:
        leaker.observe("ANOMALY_DETECTED", "finance", f"Escalate {tag} to ops.{tag}@globexmail.com at once",
                       pattern=ANOMALY_PATTERN, evidence=evidence())  # fmt: skip
    assert refused.value.code == "PII_REJECTED"
    author.recall(f"freight {tag} invoices matched twice", k=3, domain="finance", timeout_s=60)

    obs = {"operation": "OBSERVE", "type": "ANOMALY_DETECTED", "domain": "finance"}
    expected: list[tuple[str, dict[str, str], float]] = [
        ("caml_writes_total", {**obs, "outcome": "ACCEPTED"}, 1),
        ("caml_writes_total", {**obs, "outcome": "REFUSED"}, 1),
        ("caml_write_latency_ms_count", {"operation": "OBSERVE", "outcome": "ACCEPTED"}, 1),
        ("caml_write_latency_ms_count", {"operation": "OBSERVE", "outcome": "REFUSED"}, 1),
        ("caml_pii_rejections_total", {"stage": "regex"}, 1),
        ("caml_pii_scan_latency_ms_count", {}, 2),  # both contents were scanned
        ("caml_recalls_total", {"outcome": "SERVED", "domain": "finance"}, 1),
        ("caml_recall_latency_ms_count", {}, 1),
        ("caml_reputation_events_total", {"reason": "OBSERVATION_ACCEPTED"}, 1),
        ("caml_reputation_events_total", {"reason": "PII_REJECTION"}, 1),
        ("caml_reputation_score_count", {}, 2),  # two new deployments, each with a score
        ("caml_active_observations", {"type": "ANOMALY_DETECTED", "domain": "finance"}, 1),
        ("caml_active_deployments", {}, 2),
    ]

    def moved() -> tuple[str, Samples] | None:
        text, after = scrape(stack)
        ok = all(value(after, n, **ls) >= value(before, n, **ls) + d for n, ls, d in expected)
        return (text, after) if ok else None

    text, after = wait_until(moved, timeout=60, interval=0.5, what="the CAML metrics to count the new records")
    for name in ("caml_writes_total", "caml_recalls_total", "caml_pii_rejections_total",
                 "caml_reputation_events_total"):  # fmt: skip
        assert f"# TYPE {name} counter" in text
    for name in ("caml_active_observations", "caml_active_deployments"):
        assert f"# TYPE {name} gauge" in text
    for name in HISTOGRAMS:
        assert f"# TYPE {name} histogram" in text
        names = {n for n, _, _ in after}
        assert {f"{name}_bucket", f"{name}_count", f"{name}_sum"} <= names, name
        assert value(after, f"{name}_bucket", le="+Inf") == value(after, f"{name}_count")
    assert value(after, "caml_pii_scan_latency_ms_count", stage="regex") >= 1  # the e-mail: regex hit, stop
    assert value(after, "caml_write_latency_ms_sum", operation="OBSERVE") > 0
    # Each reputation bucket is cumulative; scores lie in [0, 100].
    buckets = sorted((float(ls["le"]), v) for n, ls, v in after if n == "caml_reputation_score_bucket")
    assert [v for _, v in buckets] == sorted(v for _, v in buckets)
    assert buckets[-1][1] == value(after, "caml_reputation_score_bucket", le="100.0")
