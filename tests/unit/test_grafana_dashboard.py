"""The Grafana dashboard and the Prometheus sample: they parse, and every query names a metric
that /metrics really exposes (the CAML names from the collector's own text output, the
pipeline's from the metric definitions in projections/)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest

from projections.caml.metrics import AuditRow, CamlCollector, CamlSnapshot, ReputationRow

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "hivemem-dashboard.json"
CAML_NAMES = (
    "caml_writes_total", "caml_write_latency_ms", "caml_recalls_total", "caml_recall_latency_ms",
    "caml_pii_rejections_total", "caml_pii_scan_latency_ms", "caml_reputation_score",
    "caml_reputation_events_total", "caml_active_observations", "caml_active_deployments",
)  # fmt: skip
PIPELINE_NAMES = ("hivemem_http_requests", "hivemem_gateway_writes", "hivemem_audit_events", "hivemem_projection_lag")
HISTOGRAM_SUFFIXES = ("_bucket", "_count", "_sum")
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right"}


def _caml_text() -> str:
    """The collector's exposition for a snapshot that fills every family."""
    snap = CamlSnapshot(
        audit=(AuditRow("OBSERVE", "ACCEPTED", "ANOMALY_DETECTED", "finance", None, None, "ner", 3, 1, 9.0),
               AuditRow("OBSERVE", "REFUSED", "ANOMALY_DETECTED", "finance", "PII_REJECTED", "regex", "regex", 0, 1,
                        0.5),
               AuditRow("RECALL", "SERVED", None, None, None, None, None, 6, 1, 80.0)),
        reputation=(ReputationRow(False, 1, 1, 1.0),),
        rep_events=(("OBSERVATION_ACCEPTED", 1),),
        active=(("ANOMALY_DETECTED", "finance", 1),),
    )  # fmt: skip
    registry, collector = CollectorRegistry(), CamlCollector()
    registry.register(collector)
    collector.update(snap)
    return generate_latest(registry).decode()


def _sample_names(text: str) -> set[str]:
    return {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")}


def _pipeline_exposed() -> dict[str, set[str]]:
    """Every metric defined in projections/ (prometheus_client objects): base name -> exposed names."""
    found: dict[str, set[str]] = {}
    for path in (ROOT / "projections").rglob("*.py"):
        for kind, name in re.findall(r"\b(Counter|Gauge|Histogram|Summary)\(\s*\"(\w+)\"", path.read_text()):
            base = name.removesuffix("_total")
            found[base] = {
                "Counter": {base + "_total", base + "_created"},
                "Gauge": {base},
                "Histogram": {base + s for s in (*HISTOGRAM_SUFFIXES, "_created")},
                "Summary": {base + s for s in ("_count", "_sum", "_created")},
            }[kind]
    return found


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (not functions, keywords, labels or variables)."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # label values and other strings
    s = re.sub(r"\{[^}]*\}", "", s)  # label matchers
    s = re.sub(r"\[[^\]]*\]", "", s)  # range selectors
    s = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", s)  # grouping labels
    s = re.sub(r"\$\w+", "", s)  # dashboard variables
    names = set()
    for m in re.finditer(r"(?<![\w.])[A-Za-z_:][A-Za-z0-9_:]*", s):
        if s[m.end() :].lstrip().startswith("(") or m.group() in _KEYWORDS:
            continue  # a function or an aggregation
        names.add(m.group())
    return names


def _panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for p in dashboard["panels"]:
        out.append(p)
        out += p.get("panels", [])  # panels inside collapsed rows
    return [p for p in out if p["type"] != "row"]


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


def test_collector_exposes_the_ten_seed_names_exactly() -> None:
    text = _caml_text()
    exposed = _sample_names(text)
    for name in CAML_NAMES:
        assert re.search(rf"^# TYPE {name} (counter|gauge|histogram)$", text, re.M), name
    histograms = {
        "caml_write_latency_ms",
        "caml_recall_latency_ms",
        "caml_pii_scan_latency_ms",
        "caml_reputation_score",
    }
    assert exposed == {n for n in CAML_NAMES if n not in histograms} | {
        h + s for h in histograms for s in HISTOGRAM_SUFFIXES
    }
    assert "caml_writes_total_total" not in text and "_created" not in text


def test_pipeline_metrics_are_defined_in_the_code() -> None:
    assert set(PIPELINE_NAMES) <= set(_pipeline_exposed())


def test_dashboard_imports_cleanly(dashboard: dict[str, Any]) -> None:
    assert [i["name"] for i in dashboard["__inputs"]] == ["DS_PROMETHEUS"]
    assert dashboard["__inputs"][0]["pluginId"] == "prometheus" and dashboard["uid"] and dashboard["title"]
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for p in _panels(dashboard):
        assert p["datasource"]["uid"] == "${DS_PROMETHEUS}", p["title"]
        assert p["targets"] and all(t["datasource"]["uid"] == "${DS_PROMETHEUS}" for t in p["targets"]), p["title"]
        grid = p["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, p["title"]


def test_every_query_names_an_exposed_metric(dashboard: dict[str, Any]) -> None:
    exposed = _sample_names(_caml_text()) | {n for names in _pipeline_exposed().values() for n in names}
    exprs = [t["expr"] for p in _panels(dashboard) for t in p["targets"]]
    for expr in exprs:
        names = metric_names(expr)
        assert names, expr
        assert names <= exposed, (expr, names - exposed)
    for var in (v for v in dashboard["templating"]["list"] if v["type"] == "query"):
        selected = re.fullmatch(r"label_values\((\w+), *\w+\)", var["definition"])
        assert selected is not None and selected.group(1) in exposed, var["definition"]


def test_every_caml_and_pipeline_metric_has_a_panel(dashboard: dict[str, Any]) -> None:
    used = {n for p in _panels(dashboard) for t in p["targets"] for n in metric_names(t["expr"])}
    for name in CAML_NAMES + PIPELINE_NAMES:
        assert any(u == name or u.startswith(name + "_") for u in used), name
    quantiles = " ".join(
        t["expr"] for p in _panels(dashboard) for t in p["targets"] if "histogram_quantile" in t["expr"]
    )
    for hist in ("caml_write_latency_ms", "caml_recall_latency_ms", "caml_pii_scan_latency_ms"):
        assert f"{hist}_bucket" in quantiles, hist
    for q in ("0.5", "0.95", "0.99"):
        assert f"histogram_quantile({q}," in quantiles


def test_metric_names_parser() -> None:
    expr = 'histogram_quantile(0.95, max by (le, stage) (rate(caml_pii_scan_latency_ms_bucket{stage="x"}[5m])))'
    assert metric_names(expr) == {"caml_pii_scan_latency_ms_bucket"}
    assert metric_names('max(a_sum{instance=~"$instance"}) / max(a_count) and on (x) b') == {"a_sum", "a_count", "b"}
    assert metric_names("sum(rate(x_total[$__rate_interval])) > bool 0.5e3") == {"x_total"}


def test_prometheus_sample_scrapes_the_api() -> None:
    config = yaml.safe_load((ROOT / "deploy" / "prometheus.yml").read_text())
    [job] = config["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    assert job["static_configs"][0]["targets"] == ["127.0.0.1:8080"]
