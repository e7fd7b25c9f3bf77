"""``python -m bench.embeddings``: local sentence-embedding speed (all-MiniLM-L6-v2 int8 on onnxruntime).

Prints sentences/s for embed() calls of 1, 16 and 64 texts (fp32 arithmetic: each call sorted by length and run in
batches of ``--batch-size``; int8 arithmetic: one text per run), and single-query latency p50/p95/p99 (uncached
embed_query, as the API embeds a recall query), for each arithmetic (``--arithmetic``, default both) and
onnxruntime intra-op thread count. ``--neighbour`` repeats
the run with one CPU-bound process beside it, as on a 2-core machine shared with Kafka, Postgres and the services.
The texts are generated memory-like notes of 4-40 words (seeded), so runs compare.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import onnxruntime

from inference.minilm import ARITHMETICS, DEFAULT_BATCH, MiniLmEmbedder

SUBJECTS = ["the deploy", "user alice", "the billing service", "our Kafka cluster", "the nightly job", "agent seven",
            "the staging database", "customer Acme", "the search index", "the on-call rota"]  # fmt: skip
VERBS = ["failed after", "prefers", "was moved to", "depends on", "was renamed to", "timed out waiting for",
         "reported", "must not touch", "replaced", "is blocked by"]  # fmt: skip
OBJECTS = ["region eu-west-1", "dark mode", "the new schema", "a missing config key", "Postgres 16", "the old API",
           "three retries", "the quarterly report", "version 2.4.1", "the shared cache"]  # fmt: skip
FILLER = (
    "because the rollout on Tuesday skipped the canary and nobody noticed the alert until the morning stand-up "
    "when the error budget for the month was already spent so the team froze further changes"
)


def sentences(n: int, seed: int, max_extra: int = 30) -> list[str]:
    rnd = random.Random(seed)
    filler = FILLER.split()
    out = []
    for i in range(n):
        extra = " ".join(filler[: rnd.randint(0, max_extra)])
        out.append(f"{rnd.choice(SUBJECTS)} {rnd.choice(VERBS)} {rnd.choice(OBJECTS)} {extra} (note {i})".strip())
    return out


def machine() -> str:
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), model)
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{model}, {os.cpu_count()} cores ({usable} usable), Python {platform.python_version()}, " \
           f"onnxruntime {onnxruntime.__version__}"  # fmt: skip


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


SPIN = "import time\nend = time.time() + 900\nwhile time.time() < end: pass"  # stops by itself if orphaned


@contextmanager
def busy_neighbour(on: bool) -> Iterator[None]:
    """One CPU-bound child process for the duration (ours, ended by its pid)."""
    if not on:
        yield
        return
    child = subprocess.Popen([sys.executable, "-c", SPIN])
    try:
        yield
    finally:
        child.terminate()
        child.wait(timeout=10)


def run(arithmetic: str, threads: int, batch_size: int, calls: list[int], n: int, queries: int, filler: int) -> None:
    emb = MiniLmEmbedder(threads=threads, batch_size=batch_size, cache_size=0, arithmetic=arithmetic)
    emb.load()
    corpus = sentences(n, seed=1, max_extra=filler)
    emb.embed(corpus[:64])  # warm-up: first runs allocate
    tokens = sum(emb.token_count(s) for s in corpus) / len(corpus)
    for bs in calls:
        t0 = time.perf_counter()
        for start in range(0, len(corpus), bs):
            emb.embed(corpus[start : start + bs])
        dt = time.perf_counter() - t0
        print(f"  {arithmetic} threads={threads} call={bs:>3}: {len(corpus) / dt:7.1f} sentences/s  "
              f"({len(corpus) * tokens / dt:8.0f} tokens/s, {tokens:.1f} tokens/sentence)")  # fmt: skip
    qs = sentences(queries, seed=2, max_extra=6)  # recall queries are short
    lat = []
    for q in qs:
        t0 = time.perf_counter()
        emb.embed_query(q)
        lat.append((time.perf_counter() - t0) * 1000)
    qtok = sum(emb.token_count(q) for q in qs) / len(qs)
    print(f"  {arithmetic} threads={threads} query ({qtok:.1f} tokens): p50 {pct(lat, 50):.2f} ms  "
          f"p95 {pct(lat, 95):.2f} ms  p99 {pct(lat, 99):.2f} ms")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.embeddings", description=__doc__.split("\n")[0])
    ap.add_argument("--arithmetic", default=",".join(ARITHMETICS), help="arithmetics to compare (default int8,fp32)")
    ap.add_argument("--threads", default="1,2", help="intra-op thread counts to compare (default 1,2)")
    ap.add_argument("--calls", default="1,16,64", help="texts per embed() call (default 1,16,64)")
    ap.add_argument(
        "--batch-size", type=int, default=DEFAULT_BATCH, help=f"fp32: texts per run (default {DEFAULT_BATCH})"
    )
    ap.add_argument("--sentences", type=int, default=512, help="texts per measurement (default 512)")
    ap.add_argument("--queries", type=int, default=300, help="single queries for latency (default 300)")
    ap.add_argument("--filler", type=int, default=30, help="at most this many filler words per text (default 30)")
    ap.add_argument("--neighbour", action="store_true", help="also measure beside one CPU-bound process")
    args = ap.parse_args(argv)
    threads = [int(t) for t in args.threads.split(",")]
    calls = [int(b) for b in args.calls.split(",")]
    print(f"machine: {machine()}")
    arithmetics = [a.strip() for a in args.arithmetic.split(",")]
    for a in arithmetics:
        if a not in ARITHMETICS:
            ap.error(f"--arithmetic: {a!r} is not one of {', '.join(ARITHMETICS)}")
        print(f"model ({a}): {MiniLmEmbedder(arithmetic=a).model_id}, "
              f"{args.batch_size if a == 'fp32' else 1} texts per onnxruntime run")  # fmt: skip
    for neighbour in (False, True) if args.neighbour else (False,):
        print("with one CPU-bound neighbour process:" if neighbour else "alone:")
        with busy_neighbour(neighbour):
            for a in arithmetics:
                for t in threads:
                    run(a, t, args.batch_size, calls, args.sentences, args.queries, args.filler)


if __name__ == "__main__":
    main()
