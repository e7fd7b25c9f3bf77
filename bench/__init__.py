"""HiveMem's benchmarks, run as ``hivemem bench <name> [options]``: each module's ``main(argv)``.

``BENCHES`` names them for the command line (``hivemem bench --help`` lists them with these lines);
``python -m bench.embeddings``, ``bench.pii`` and ``bench.mcp_overhead`` are smaller ones run directly.
"""

BENCHES: dict[str, str] = {
    "pipeline": "gate and audit projection: envelopes/s, write->queryable latency, CPU per process",
    "governance": "votes/s through gate and governance to decisions, proposal->decision latency",
    "caml": "collective memory (CAML): ingest, recall latency, observe->recallable, PII cost",
    "memory": "per-claw memory (KMMS): recall on a LongMemEval-shaped corpus or LoCoMo/LongMemEval, latency",
    "episode_model": "the search's episode model: its weights fitted on a public corpus in a running stack, checked",
    "kmp": "process memory (KMP): ingest rate; wake, ask, near and trace latency; MCP overhead",
    "replay": "rebuilding a read model from the log (hivemem replay): events/s, digests equal",
    "kstar": "KSTAR: export and import rates, bundle sizes, control-token verify latency",
    "dashboard": "the live dashboard: WebSocket fan-out, and what change notifications cost the pipeline",
}
