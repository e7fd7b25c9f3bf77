"""Migration 12: the CAML metrics' SQL functions (read by ``/metrics``, ``projections/caml/metrics.py``).

The writes happen in the caml processor, another process, so the API computes every CAML metric
at scrape time from the read model (the log's fold: it survives restarts and replays). The
application role cannot read other tenants' rows, so these functions run with the owner's
rights (SECURITY DEFINER, a fixed ``search_path``) and return aggregates only — counts per label
value, histogram bucket counts and sums — never a row, an id or a text a claw wrote. Every label
value they return comes from a closed set (operations, outcomes, the six types, the fourteen
domains, PII stages, reputation reasons), so cardinality stays bounded.

Histogram buckets are given by the caller (one list of bounds, in Python). ``bucket`` is the
index of the first bound ``>= value`` (Prometheus' ``le``), ``cardinality(bounds)`` for ``+Inf``:
the number of bounds strictly below the value, which ``width_bucket`` (lower-inclusive: it counts
bounds ``<= value``) gives on the negated value against the negated bounds (see ``_bucket``).
"""

from __future__ import annotations

from projections.read_models import APP_ROLE


def _bucket(value: str) -> str:
    """SQL for the number of ``bounds`` strictly below ``value`` (0..n; n: the ``+Inf`` bucket)."""
    neg = "ARRAY(SELECT -b FROM unnest(bounds) b ORDER BY 1)"
    return f"cardinality(bounds) - width_bucket(-({value}), {neg})"


_DEFINER = "LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog"

# One pass over the audit log for five metrics: writes and recalls (counts and latency),
# PII rejections by the stage that hit, and the PII scan latency by the deepest stage run
# (``pii_stages_run`` is "regex,ner; <why>": the part before ';' lists the stages in order).
_AUDIT_SUMMARY = f"""
CREATE FUNCTION hivemem.caml_audit_summary(bounds double precision[])
RETURNS TABLE (operation text, outcome text, observation_type text, domain text, reason_code text,
               pii_stage text, scan_depth text, bucket int, n bigint, latency_sum double precision)
{_DEFINER} AS $$
    SELECT operation, outcome, observation_type, domain, reason_code, pii_stage,
           regexp_replace(split_part(pii_stages_run, ';', 1), '^.*,', ''),
           {_bucket("latency_ms")}, count(*), sum(latency_ms)
    FROM caml.caml_audit_log
    WHERE operation IN ('OBSERVE', 'VALIDATE', 'RECALL')
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
$$"""

# Current scores of every deployment with a reputation row, and whether it is suspended.
_REPUTATION_SUMMARY = f"""
CREATE FUNCTION hivemem.caml_reputation_summary(bounds double precision[])
RETURNS TABLE (suspended boolean, bucket int, n bigint, score_sum double precision)
{_DEFINER} AS $$
    SELECT coalesce(d.suspended, false), {_bucket("r.score")}, count(*), sum(r.score)
    FROM caml.caml_reputation r LEFT JOIN caml.caml_deployments d USING (tenant, claw_id)
    GROUP BY 1, 2
$$"""

_REP_EVENT_COUNTS = f"""
CREATE FUNCTION hivemem.caml_rep_event_counts()
RETURNS TABLE (reason text, n bigint)
{_DEFINER} AS $$
    SELECT reason, count(*) FROM caml.caml_rep_events GROUP BY 1
$$"""

# Active and not expired at the database's clock now (what recall could return).
_ACTIVE_OBSERVATIONS = f"""
CREATE FUNCTION hivemem.caml_active_observations()
RETURNS TABLE (observation_type text, domain text, n bigint)
{_DEFINER} AS $$
    SELECT observation_type, domain, count(*) FROM caml.caml_observations
    WHERE active AND expires_at > (extract(epoch FROM now()) * 1000)::bigint
    GROUP BY 1, 2
$$"""

FUNCTIONS = {
    "hivemem.caml_audit_summary(double precision[])": _AUDIT_SUMMARY,
    "hivemem.caml_reputation_summary(double precision[])": _REPUTATION_SUMMARY,
    "hivemem.caml_rep_event_counts()": _REP_EVENT_COUNTS,
    "hivemem.caml_active_observations()": _ACTIVE_OBSERVATIONS,
}


def caml_metrics_migration() -> list[str]:
    out: list[str] = []
    for signature, ddl in FUNCTIONS.items():
        # Functions are executable by PUBLIC by default: only the app role (and the owner) may call these.
        out += [ddl, f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC",
                f"GRANT EXECUTE ON FUNCTION {signature} TO {APP_ROLE}"]  # fmt: skip
    return out
