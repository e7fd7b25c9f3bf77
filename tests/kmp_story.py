"""An incident told to KMP by two writers (a triage agent and a fixer agent): the test and bench corpus.

Payments API 5xx spike -> hypothesis (DB pool) -> a failed attempt (restart) -> the cause (deploy v42
shrank the pool) -> the decision (roll back) chosen because of the evidence -> verified fixed;
a guardrail, an open question and a next action remain. Each write is one ingest payload (wire form).
"""

from __future__ import annotations

from typing import Any

MIN = 60_000


def _e(eid: str, kind: str, text: str, at: int, *dims: str) -> dict[str, Any]:
    return {"id": eid, "kind": kind, "text": text, "occurredAt": at,
            "coordinates": [{"dimension": d, "sequence": at} for d in dims]}  # fmt: skip


def _r(src: str, dst: str, rel: str, cls: str, why: str = "", ev: list[str] | None = None) -> dict[str, Any]:
    return {"sourceRef": src, "targetRef": dst, "rel": rel, "semanticClass": cls, "why": why,
            "evidenceRefs": ev or []}  # fmt: skip


def story(about: str, t0: int) -> list[tuple[str, dict[str, Any]]]:
    """(writer, payload) in the order they write."""
    triage, fixer = "triage-agent", "fixer-agent"
    return [
        (
            triage,
            {
                "ingestId": f"{about}-1",
                "about": about,
                "contextRefs": [],
                "provenance": {"sourceKind": "AGENT", "sourceAgent": triage},
                "dimensions": [
                    {"id": "session:1", "kind": "session", "title": "triage session"},
                    {"id": "phase:detect", "kind": "incident_phase", "title": "detection"},
                ],
                "entries": [
                    _e(
                        "obj",
                        "objective",
                        "Restore the payments API: error rate back under 0.1 %.",
                        t0,
                        "session:1",
                        "phase:detect",
                    ),
                    _e(
                        "obs-5xx",
                        "observation",
                        "Payments API returns HTTP 503 on 12 % of requests since 09:40.",
                        t0 + MIN,
                        "session:1",
                        "phase:detect",
                    ),
                    _e(
                        "hyp-pool",
                        "hypothesis",
                        "The database connection pool is exhausted.",
                        t0 + 2 * MIN,
                        "session:1",
                    ),
                    _e(
                        "guard-schema",
                        "guardrail",
                        "No schema migrations while the incident is open.",
                        t0 + 2 * MIN,
                        "session:1",
                    ),
                ],
                "evidence": [
                    {
                        "id": "ev-dash",
                        "text": "Grafana: 503 rate 12 %, p99 latency 8 s, pool wait 7.9 s.",
                        "supports": ["obs-5xx", "hyp-pool"],
                        "source": "grafana",
                    }
                ],
                "relations": [
                    _r("obs-5xx", "obj", "scoped_to", "STRUCTURAL"),
                    _r(
                        "hyp-pool",
                        "obs-5xx",
                        "derived_from",
                        "CAUSAL",
                        "pool wait time matches the 503 latency",
                        ["ev-dash"],
                    ),
                    _r("guard-schema", "obj", "scoped_to", "STRUCTURAL"),
                ],
            },
        ),
        (
            fixer,
            {
                "ingestId": f"{about}-2",
                "about": about,
                "contextRefs": ["obj", "obs-5xx", "hyp-pool"],
                "provenance": {"sourceKind": "AGENT", "sourceAgent": fixer},
                "dimensions": [
                    {"id": "session:2", "kind": "session", "title": "fix session"},
                    {"id": "attempt:1", "kind": "attempt", "title": "restart pods"},
                    {"id": "phase:mitigate", "kind": "incident_phase", "title": "mitigation"},
                ],
                "entries": [
                    _e(
                        "act-restart",
                        "action",
                        "Restarted the payments pods to reset the pool.",
                        t0 + 5 * MIN,
                        "session:2",
                        "attempt:1",
                        "phase:mitigate",
                    ),
                    _e(
                        "res-restart",
                        "result",
                        "Errors came back within 4 minutes of the restart.",
                        t0 + 9 * MIN,
                        "session:2",
                        "attempt:1",
                    ),
                ],
                "evidence": [
                    {
                        "id": "ev-restart",
                        "text": "503 rate 0 % at 09:56, 11 % again at 10:00.",
                        "supports": ["res-restart"],
                        "source": "grafana",
                    }
                ],
                "relations": [
                    _r(
                        "act-restart",
                        "hyp-pool",
                        "depends_on",
                        "CAUSAL",
                        "resetting the pool only helps if it is the pool",
                        ["ev-dash"],
                    ),
                    _r("res-restart", "act-restart", "follows", "PROCEDURAL"),
                ],
            },
        ),
        (
            triage,
            {
                "ingestId": f"{about}-3",
                "about": about,
                "contextRefs": ["hyp-pool", "res-restart"],
                "provenance": {"sourceKind": "AGENT", "sourceAgent": triage},
                "dimensions": [],
                "evidence": [
                    {
                        "id": "ev-diff",
                        "text": "Deploy v42 diff: db.pool.max_size 50 -> 5.",
                        "supports": ["cause-v42"],
                        "source": "git",
                    }
                ],
                "entries": [
                    _e(
                        "cause-v42",
                        "observation",
                        "Deploy v42 lowered the database pool size from 50 to 5.",
                        t0 + 11 * MIN,
                        "session:1",
                    ),
                    _e(
                        "q-canary",
                        "question",
                        "Why did the canary not catch the pool change?",
                        t0 + 12 * MIN,
                        "session:1",
                    ),
                ],
                "relations": [
                    _r("cause-v42", "hyp-pool", "refines", "CAUSAL", "explains why the pool is exhausted", ["ev-diff"]),
                    _r("q-canary", "cause-v42", "near", "STRUCTURAL"),
                ],
            },
        ),
        (
            fixer,
            {
                "ingestId": f"{about}-4",
                "about": about,
                "contextRefs": ["obj", "cause-v42", "res-restart", "guard-schema"],
                "provenance": {"sourceKind": "AGENT", "sourceAgent": fixer},
                "dimensions": [{"id": "attempt:2", "kind": "attempt", "title": "roll back v42"}],
                "entries": [
                    _e(
                        "dec-rollback",
                        "decision",
                        "Roll back the payments service to v41.",
                        t0 + 14 * MIN,
                        "session:2",
                        "attempt:2",
                        "phase:mitigate",
                    ),
                    _e(
                        "res-fixed",
                        "result",
                        "After the rollback the 503 rate is 0.02 % for 30 minutes.",
                        t0 + 45 * MIN,
                        "session:2",
                        "attempt:2",
                    ),
                    _e(
                        "next-pm",
                        "next_action",
                        "Write the postmortem and add a pool-size check to the canary.",
                        t0 + 46 * MIN,
                        "session:2",
                    ),
                ],
                "evidence": [
                    {
                        "id": "ev-fixed",
                        "text": "Grafana: 503 rate 0.02 % from 10:25 to 10:55.",
                        "supports": ["res-fixed"],
                        "source": "grafana",
                    }
                ],
                "relations": [
                    _r(
                        "dec-rollback",
                        "cause-v42",
                        "chosen_because",
                        "MOTIVATIONAL",
                        "v41 has the old pool size; a restart did not hold",
                        ["ev-diff", "ev-restart"],
                    ),
                    _r(
                        "dec-rollback",
                        "res-restart",
                        "supersedes",
                        "CAUSAL",
                        "the restart did not hold",
                        ["ev-restart"],
                    ),
                    _r(
                        "res-fixed",
                        "dec-rollback",
                        "verified_by",
                        "EVIDENTIAL",
                        "errors stayed down after it",
                        ["ev-fixed"],
                    ),
                    _r(
                        "res-fixed", "obj", "satisfies_constraint", "CONSTRAINT", "error rate under 0.1 %", ["ev-fixed"]
                    ),
                    _r("next-pm", "q-canary", "resolves", "PROCEDURAL", "the canary check answers it"),
                ],
            },
        ),
    ]
