"""``hivemem bench memory``: per-agent long-term memory (KMMS) on a LongMemEval-shaped benchmark or a public one.

The corpus (``--dataset synthetic``: ``bench.memory_corpus``, seeded; ``--dataset
locomo|longmemeval|realtalk|realmem|beam --file PATH``: the public files, ``bench.memory_public``; or ``--corpus`` to
load a saved one) has users with a haystack of timestamped sessions each and questions with a question date and
evidence sessions. This bench:

0. computes the plain baseline on the same units (``bench.memory_baseline``: HiveMem's rounds, the same embedder,
   max-cosine and BM25 per session, reciprocal-rank fusion; ``--no-baseline`` skips it), before the stack starts;

1. starts its own stack in a temporary HIVEMEM_HOME (or, with ``--existing`` / ``--skip-ingest``, uses the running
   one from the settings), one claw per user (``mem-<user>``, token bound to it) and that user's memory in it;
2. ingests every session as an episode (``mem.add``, the user's sessions in time order, users in parallel) with a
   progress bar, and waits until all are searchable; the throughput end to end;
3. L4 write latency on a sample of held-back distractor sessions added one by one on the quiet stack: the add call
   (verdict included), and add call -> searchable (``wait_indexed`` polled every 10 ms);
4. for each ``--modes`` (hybrid, vector, text): every question searched with ``as_of`` = its question date, scored
   by ``bench.memory_metrics`` per category, for the point-in-time questions, and overall (session recall@1/5/10,
   any-hit, NDCG@10, current-vs-superseded, future leaks, abstention / false abstention), with the search latency
   p50/p95/p99 (client and server-reported) and, on the temporary stack, the CPU each of its processes spent a
   search (``bench.cpu``: a thread that spins shows there, not in one caller's latency). An L1-L3 node hit counts
   for the sessions of the episodes it cites (``--node-hits cite``, the default; ``skip``: L4 hits only);
5. HiveMem's modes beside the baseline (``bench.memory_compare``): recall@5/@10 and NDCG@10 per category and
   overall, and by how much each mode beats or trails the baseline; with ``--ask``, what ``ask`` says, scored by
   the gold answers' words beside the baseline's first unit (``bench.memory_answers``).

Prints the figures and writes them to ``bench/results/memory-<date>-<users>u.txt`` (or ``--out``). Figures only:
nothing here asserts a level. Everything this bench calls on the SDK is in ``bench.memory_sdk``; the ingest and
the questions are ``bench.memory_run``, the scores and tables ``bench.memory_report``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress

from bench import BENCHES, memory_baseline, memory_compare, vector_cache
from bench.cpu import CpuSample, per_item
from bench.figures import dist, load, percentile
from bench.memory_answers import ask_section
from bench.memory_corpus import SHAPES, Corpus
from bench.memory_layers import consolidate_locally
from bench.memory_metrics import (
    ABSTAIN_BELOW,
    Retrieval,
)
from bench.memory_public import DATASETS, ROLES, categories, load_corpus, locomo_note
from bench.memory_report import context_recall, dump, gold, score_run, table
from bench.memory_run import COLUMNS, WARM_UP, ModeRun, ingest, run_mode, run_under_load
from bench.memory_sdk import NODE_HITS, l0_lookups, open_memories, sdk_close
from bench.pii import cpu_model
from bench.replay import timed_replay
from bench.run_settings import settings_line
from hivemem.settings import Settings

TENANT = "kmms-bench"
RESULTS = Path(__file__).resolve().parent / "results"


@contextlib.contextmanager
def stack(existing: bool) -> Iterator[tuple[Settings, str, dict[str, int]]]:
    """(settings, tenant, pids): the running stack's (its first tenant unless HIVEMEM_BENCH_TENANT; no pids), or a
    temporary one's, with its processes by name (``bench.temp_stack.stack_pids``)."""
    if existing:
        settings = Settings.from_env()
        tenant = os.environ.get("HIVEMEM_BENCH_TENANT") or next(iter(settings.load_config().tenants))
        httpx.get(f"http://{settings.api_host}:{settings.api_port}/healthz", timeout=5).raise_for_status()
        yield settings, tenant, {}
        return
    from bench.temp_stack import running_stack, stack_pids

    with running_stack({TENANT: True}, {TENANT: "enterprise"}) as s:
        yield s.settings, TENANT, stack_pids(s)


def scale(settings: Settings, tenant: str, corpus: Corpus, mems: dict[str, Any], args: argparse.Namespace,
          out: Console, n: int) -> None:  # fmt: skip
    from bench.memory_scale import Scaled, ask_all, build

    user = corpus.users[0].user_id
    big: Scaled = build(settings.require_database(), tenant, f"mem-{user}"[:64], user, args.scale, args.seed)
    ask_all(mems[user], corpus, args.k, big)
    out.print(f"\n{n}. one memory at scale: {user}'s memory grown to {big.episodes:,} episodes ({big.units:,} rounds, "
              f"{big.vectors:,} vectors added: moved copies of the stored corpus, bench/memory_scale.py) in "
              f"{big.load_s:.0f} s, HNSW index built and tables vacuumed in {big.index_s:.0f} s  "
              f"[load {load()}]")  # fmt: skip
    out.print(f"   every question asked of it (hybrid, k={args.k}), server-reported {dist(big.server_ms)}"
              + (f"  errors: {big.errors}" if big.errors else ""))  # fmt: skip
    out.print(f"   (the first pass, right after the load, with the memory not yet in Postgres's cache: "
              f"{dist(big.cold_ms)})")  # fmt: skip


# --- main ------------------------------------------------------------------------------------------------------


def build_corpus(args: argparse.Namespace) -> Corpus:
    if args.corpus:
        return Corpus.load(args.corpus)
    return load_corpus(args.dataset, args.file, limit=args.limit, photos=args.photos, seed=args.seed,
                       users=args.users, sessions=args.sessions, shape=args.shape, roles=args.roles,
                       sample=args.sample, sample_skip=args.sample_skip)  # fmt: skip


def _turns(roles: str, one: bool = False) -> str:
    """How the report names the messages a public conversation's turns became (``--roles``)."""
    if roles == "pair":
        return (
            "a message of the first speaker's as user, the other's as assistant,"
            if one
            else "the first speaker's user messages and the other's assistant messages,"
        )
    return "a user message" if one else "user messages"


def cached_note(base: memory_baseline.Baseline, cache_path: Path | None) -> str:
    """What the baseline's line says of its vector cache: how many vectors it read there, and where."""
    if cache_path is None:
        return " (no vector cache)"
    return f" ({base.cached:,} of them read from the vector cache {cache_path}, not embedded again)"


def baseline(corpus: Corpus, console: Console, cache_path: Path | None,
             answers: bool = False) -> memory_baseline.Baseline:  # fmt: skip
    """The baseline over the whole corpus, with a progress bar over the unit texts it embeds; the vectors kept at
    ``cache_path`` by an earlier run of the same model are read instead of embedded (None: no cache)."""
    from inference.embeddings import embedder_from_env

    embedder = embedder_from_env(os.environ)
    cache = vector_cache.VectorCache(cache_path, embedder.model_id) if cache_path is not None else None
    try:
        with Progress(*COLUMNS, console=console) as bar:
            task = bar.add_task("baseline: units embedded", total=None, rate="")
            t0 = time.perf_counter()

            def step(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total, rate=f"{done / (time.perf_counter() - t0):6.1f}/s")

            return memory_baseline.run(corpus, embedder, progress=step, cache=cache, answers=answers)
    finally:
        if cache is not None:
            cache.close()


def under_load(corpus: Corpus, settings: Settings, tenant: str, alone: ModeRun, args: argparse.Namespace,
               progress: Console, out: Console, n: int) -> None:  # fmt: skip
    """The section of ``--clients``: ``alone``'s questions asked by that many callers at once."""
    sets = [open_memories(settings, tenant, [u.user_id for u in corpus.users]) for _ in range(args.clients)]
    try:
        run = run_under_load(corpus, sets, alone, args.k, progress, args.node_hits)
    finally:
        for s in sets:
            sdk_close(s)
    answered = len(run.client_ms)
    out.print(f"\n{n}. questions under load, mode {alone.mode}: {args.clients} callers at once  [load {load()}]"
              + (f"  errors: {dict(run.errors)}" if run.errors else ""))  # fmt: skip
    one = len(alone.client_ms) / (sum(alone.client_ms) / 1000) if alone.client_ms else float("nan")
    out.print(f"   {answered:,} searches in {run.seconds:.1f} s = {answered / run.seconds:.1f} searches/s (one caller: "
              f"{one:.1f} a second)")  # fmt: skip
    out.print(f"   search latency, client (HTTP)   {dist(run.client_ms)}")
    out.print(f"   the same hits as when asked alone (sessions, in order): {run.same:,} of {run.compared:,} questions")


def side_by_side(corpus: Corpus, runs: Sequence[ModeRun], base: memory_baseline.Baseline | None, k: int,
                 out: Console, n: int) -> None:  # fmt: skip
    systems: dict[str, Sequence[Retrieval | None]] = {f"HiveMem {r.mode}": r.results for r in runs}
    if base is not None:
        systems.update({memory_baseline.SYSTEMS[name]: res for name, res in base.results.items()})
    rows = memory_compare.compare([gold(q) for q in corpus.questions], systems, categories(corpus))
    out.print(f"\n{n}. HiveMem beside the baseline, {corpus.source}")
    out.print(memory_compare.table(rows, k))
    for line in memory_compare.verdicts(rows):
        out.print(f"   {line}")
    for r in runs:
        out.print(f"   search latency, HiveMem {r.mode}: client p50 {percentile(r.client_ms, 0.5):.1f} ms, p95 "
                  f"{percentile(r.client_ms, 0.95):.1f} ms; server p50 {percentile(r.server_ms, 0.5):.1f} ms, p95 "
                  f"{percentile(r.server_ms, 0.95):.1f} ms")  # fmt: skip
    if base is not None:
        ms = base.search_ms
        out.print(f"   baseline, in this process: question embedded and ranked p50 {percentile(ms, 0.5):.1f} ms, "
                  f"p95 {percentile(ms, 0.95):.1f} ms")  # fmt: skip


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="hivemem bench memory", description=BENCHES["memory"])
    ap.add_argument("--users", type=int, default=30, help="users (one claw each) in the generated corpus")
    ap.add_argument("--sessions", type=int, default=40, help="sessions per user in the generated corpus")
    ap.add_argument("--seed", type=int, default=7, help="seed of the generated corpus")
    ap.add_argument("--shape", choices=SHAPES, default="short", help="the generated corpus' assistant replies: one "
                    "sentence, or LongMemEval-sized (800-2,000 characters) with single-session-assistant "
                    "questions")  # fmt: skip
    ap.add_argument("--modes", default="hybrid,vector,text", help="search modes to run, comma-separated")
    ap.add_argument("--dataset", choices=DATASETS, default="synthetic", help="the corpus: generated (synthetic), or "
                    "public data (--file): locomo10.json, LongMemEval's JSON, REALTALK's chats, RealMem's "
                    "dialogues, BEAM's chats")  # fmt: skip
    ap.add_argument("--file", type=Path, default=None, help="with a public --dataset: the dataset's file "
                    "(realtalk, realmem: one file or the directory of them; beam: a scale's directory, chats/100K, "
                    "or one conversation's)")  # fmt: skip
    ap.add_argument("--longmemeval", type=Path, default=None, metavar="FILE",
                    help="same as --dataset longmemeval --file FILE")  # fmt: skip
    ap.add_argument("--photos", action="store_true", help="with --dataset locomo: a turn that shares a photo ends "
                    "with ' [shares a photo of <its BLIP caption>]'")  # fmt: skip
    ap.add_argument("--roles", choices=ROLES, default="user", help="with --dataset locomo|realtalk: every turn a "
                    "user message (user), or the first speaker's user messages and the other's assistant ones "
                    "(pair); the content is 'Speaker: text' either way")  # fmt: skip
    ap.add_argument("--k", type=int, default=None, help="hits per search (recall@k is over their distinct "
                    "sessions); default 50 on a public dataset, 10 on the synthetic one")  # fmt: skip
    ap.add_argument("--node-hits", choices=NODE_HITS, default="cite", help="an L1-L3 node hit counts for the "
                    "sessions of the episodes it cites (cite), or for none (skip: L4 hits only)")  # fmt: skip
    ap.add_argument("--no-baseline", dest="baseline", action="store_false", help="skip the plain baseline (units, "
                    "same embedder, max-cosine + BM25, RRF k=60; bench/memory_baseline.py)")  # fmt: skip
    ap.add_argument("--baseline-cache", type=Path, default=None, metavar="FILE", help="where the baseline keeps "
                    "the unit vectors it embedded, by model and text, for the next run (default "
                    "$XDG_CACHE_HOME/hivemem/baseline-vectors.sqlite, ~/.cache when unset; "
                    "bench/vector_cache.py)")  # fmt: skip
    ap.add_argument("--no-baseline-cache", dest="baseline_cache_on", action="store_false",
                    help="embed every unit text again, and keep nothing")  # fmt: skip
    ap.add_argument("--skip-ingest", action="store_true",
                    help="questions only, on the running stack that a previous run (--existing) loaded")  # fmt: skip
    ap.add_argument("--existing", action="store_true", help="use the running stack (settings) instead of a "
                    "temporary one; tenant: HIVEMEM_BENCH_TENANT or the first in the tenants file")  # fmt: skip
    ap.add_argument("--out", type=Path, default=None, help="result file (default bench/results/memory-<date>-<n>u.txt, "
                    "or -locomo.txt, -longmemeval.txt)")  # fmt: skip
    ap.add_argument("--corpus", type=Path, default=None, help="a saved corpus (Corpus.save JSON) instead of generating")
    ap.add_argument("--limit", type=int, default=None, help="with --dataset longmemeval: its first N questions; "
                    "locomo, realtalk, beam: its first N conversations; realmem: its first N files")  # fmt: skip
    ap.add_argument("--sample", type=int, default=None, metavar="N", help="with --dataset longmemeval: N questions "
                    "drawn by a fixed hash of their ids (the same on every machine)")  # fmt: skip
    ap.add_argument("--sample-skip", type=int, default=0, metavar="M", help="with --sample: the draw's questions "
                    "from the M-th on (a draw disjoint from --sample M's)")  # fmt: skip
    ap.add_argument("--save-corpus", type=Path, default=None, help="write the corpus used (JSON) here")
    ap.add_argument(
        "--dump",
        type=Path,
        default=None,
        help="write each question's ranked hits, per mode, here (JSON lines: for studying misses)",
    )
    ap.add_argument("--probes", type=int, default=50, help="sessions timed add -> searchable, one by one")
    ap.add_argument("--concurrency", type=int, default=4, help="users ingested in parallel")
    ap.add_argument("--clients", type=int, default=0, metavar="N", help="then ask the first mode's questions again "
                    "with N callers at once, each with its own HTTP clients: searches a second, latency, and whether "
                    "each question gets the hits it got alone (0: skip)")  # fmt: skip
    ap.add_argument("--ask", action="store_true", help="then ask every question with a gold answer (POST /ask, k=5) "
                    "and score its answer by the gold answer's words, beside the baseline's first unit "
                    "(bench/memory_answers.py)")  # fmt: skip
    ap.add_argument("--wait-ms", type=int, default=5_000, help="the add call's wait for the verdict")
    ap.add_argument("--index-timeout", type=float, default=900.0, help="seconds to wait for one user's episodes")
    ap.add_argument(
        "--no-replay",
        dest="replay",
        action="store_false",
        help="skip the rebuild of the KMMS read model from the log (temporary stack only)",
    )
    ap.add_argument("--scale", type=int, default=0, help="then grow the first user's memory to N episodes and time "
                    "every question against it (bench/memory_scale.py; temporary stack only)")  # fmt: skip
    args = ap.parse_args(argv)
    if args.longmemeval:
        if args.file or args.dataset not in ("synthetic", "longmemeval"):
            ap.error("--longmemeval FILE is --dataset longmemeval --file FILE: give one or the other")
        args.dataset, args.file = "longmemeval", args.longmemeval
    if args.dataset != "synthetic" and args.file is None:
        ap.error(f"--dataset {args.dataset} needs --file PATH")
    if args.k is None:
        args.k = 10 if args.dataset == "synthetic" or args.corpus else 50
    if args.scale and (args.existing or args.skip_ingest):
        ap.error("--scale writes into the read model: only with the temporary stack and its ingest")
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if bad := [m for m in modes if m not in ("hybrid", "vector", "text")]:
        ap.error(f"unknown mode(s): {', '.join(bad)}")
    if not 0 <= args.clients <= 256:
        ap.error(f"--clients {args.clients}: give 0 (skip) to 256 callers")
    progress = Console(stderr=True)  # progress on stderr; the figures on stdout and in the result file
    out = Console(record=True, width=150, markup=False, highlight=False)

    try:
        corpus = build_corpus(args)
    except (ValueError, OSError) as e:  # a missing file, or one that is not the dataset's format
        progress.print(f"[red]BAD_ARGUMENT[/red]: {escape(str(e))}", soft_wrap=True)  # whole: a path is not cut in two
        return 2
    if args.save_corpus:
        corpus.save(args.save_corpus)
    cache_path = (args.baseline_cache or vector_cache.default_path()) if args.baseline_cache_on else None
    # Before the stack starts: the cores are its own.
    base = baseline(corpus, progress, cache_path, args.ask) if args.baseline else None
    st = corpus.stats()
    started = datetime.now(UTC)
    out.print(f"hivemem bench memory  {started:%Y-%m-%d %H:%M} UTC")
    out.print(f"machine: {cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}; load average "
              f"{load()} before the start (the machine is shared)")  # fmt: skip
    out.print(settings_line(os.environ))
    cats = ", ".join(f"{c} {n}" for c, n in st["by_category"].items() if n)
    out.print(f"corpus: {corpus.source} (seed {corpus.seed}), {st['users']} users, {st['sessions']:,} sessions "
              f"({st['turns_min']}-{st['turns_max']} turns, {st['turns_mean']:.1f} on average, "
              f"{st['chars'] / 1e6:.2f} M characters, assistant replies {st['reply_chars_mean']:,.0f} on average; "
              f"{st['distractor_share']:.0%} distractors), "
              f"{st['questions']} questions: {cats}; {st['point_in_time']} point-in-time, "
              f"{st['asked_before_later_sessions']} asked before some of their user's sessions")  # fmt: skip
    if args.dataset == "locomo" and not args.corpus:
        photos = " + photo captions" if args.photos else ""
        out.print(locomo_note(args.file, args.limit) + "; each question asked one day after its conversation's last "
                  f"session; turns as {_turns(args.roles)} 'Speaker: text'{photos}")  # fmt: skip
    if args.dataset == "realtalk" and not args.corpus:
        out.print("REALTALK, by LoCoMo's protocol: each chat a memory, each session one episode at its date, every "
                  f"message {_turns(args.roles, one=True)} 'Speaker: text'; each question asked one day after its "
                  "chat's last session; an evidence id's session is the one holding that message")  # fmt: skip
    if args.dataset == "realmem" and not args.corpus:
        out.print("RealMem: each person's file a memory, each session one episode (a day's sessions 10 minutes apart "
                  "from 08:00 UTC, in the file's order), user and assistant messages as they are; each query asked "
                  "one second before its own session, its evidence the earlier sessions its reply's memory "
                  "names (bench/memory_realmem.py)")  # fmt: skip
    if args.dataset == "beam" and not args.corpus:
        out.print("BEAM: each conversation a memory, each exchange (a user message and its replies) one episode at "
                  "its batch's time anchor, a minute apart; each question asked one day after the last exchange, "
                  "its evidence the exchanges holding its source messages (bench/memory_beam.py)")  # fmt: skip
    out.print(
        f"scoring: session recall over the first distinct sessions of k={args.k} hits; L1-L3 node hits "
        + ("count for the sessions of the episodes they cite" if args.node_hits == "cite" else "skipped")
    )
    if base is not None:
        out.print(f"\n0. baseline (bench/memory_baseline.py): {base.units:,} units (HiveMem's rounds, role prefixes "
                  f"off), {base.distinct_texts:,} distinct texts embedded in {base.embed_s:.1f} s by the product's "
                  f"embedder in this process{cached_note(base, cache_path)}; per session the best cosine and the "
                  f"best BM25 (rank_bm25 BM25Okapi, "
                  f"lower-cased words, English stop words removed), fused by RRF k={memory_baseline.RRF_K}; only "
                  f"sessions up to the question's asOf")  # fmt: skip

    existing = args.existing or args.skip_ingest
    with stack(existing) as (settings, tenant, pids):
        mems = open_memories(settings, tenant, [u.user_id for u in corpus.users])
        try:
            where = "the running stack" if existing else "a temporary stack"
            if not args.skip_ingest:
                ing = ingest(corpus, mems, args, progress)
                out.print(f"\n1. ingest into {where} (tenant {tenant}): {ing.sessions:,} sessions as episodes, "
                          f"{args.concurrency} users in parallel, each in time order  [load {load()}]")  # fmt: skip
                rate = (ing.sessions - len(ing.probe_add_ms)) / ing.seconds
                out.print(f"   time to searchable (first add -> every episode searchable) {ing.seconds:.1f} s = "
                          f"{rate:.1f} episodes/s end to end; outcomes "
                          f"{dict(ing.outcomes)}; not searchable in time: {ing.unindexed}")  # fmt: skip
                out.print(f"   add call under load (verdict, wait_ms={args.wait_ms})  {dist(ing.add_ms)}")
                out.print(f"\n2. L4 write latency, {len(ing.probe_add_ms)} held-back sessions one by one on the quiet "
                          f"stack  [load {load()}]")  # fmt: skip
                out.print(f"   add call (verdict included)          {dist(ing.probe_add_ms)}")
                out.print(f"   add call -> searchable (10 ms polls) {dist(ing.probe_searchable_ms)}")
            else:
                out.print(f"\n1-2. ingest skipped: questions against what {where} holds (tenant {tenant})")
            n = 2
            runs: list[ModeRun] = []
            for n, mode in enumerate(modes, start=3):
                before = CpuSample.take(pids)
                run = run_mode(corpus, mems, mode, args.k, progress, args.node_hits)
                spent = CpuSample.take(pids).since(before)
                runs.append(run)
                if args.dump:
                    dump(args.dump, corpus, run)
                groups = score_run(corpus, run)
                out.print(f"\n{n}. questions, mode {mode}  [load {load()}]"
                          + (f"  errors: {dict(run.errors)}" if run.errors else ""))  # fmt: skip
                out.print(f"   search latency, client (HTTP)   {dist(run.client_ms)}")
                out.print(f"   search latency, server-reported {dist(run.server_ms)}")
                if pids:  # the temporary stack's processes (a spinning thread shows here, not in the latency)
                    asked = len(run.results) + min(WARM_UP, len(corpus.questions))  # with run_mode's warm-up
                    out.print(f"   CPU ms a search, by process (the stack's; this one's not counted): "
                              f"{per_item(spent, asked)}")  # fmt: skip
                out.print(table(mode, groups, args.k))
                out.print(f"   {context_recall(corpus, run)}")
            if args.clients > 0 and runs:
                n += 1
                under_load(corpus, settings, tenant, runs[0], args, progress, out, n)
            if args.ask:
                n += 1
                ask_section(corpus, mems, base.answers if base is not None else None, progress, out, n)
            n += 1
            side_by_side(corpus, runs, base, args.k, out, n)
            lookups = l0_lookups(settings, tenant, corpus)
            out.print(f"\n{n + 1}. L0 lookup (the search's routing step: which question words the memory's index "
                      f"holds), SQL on the application role  [load {load()}]")  # fmt: skip
            out.print(f"   {dist(lookups, digits=2)}")
            if args.replay and not existing:  # before --scale, which grows the read model beside the log
                out.print(f"\n{n + 2}. the KMMS read model rebuilt from the log, as `hivemem replay --projection kmms` "
                          f"does  [load {load()}]")  # fmt: skip
                out.print(f"   {timed_replay(settings, 'kmms', progress)}")
                n += 1
            if args.scale:
                scale(settings, tenant, corpus, mems, args, out, n + 2)
        finally:
            sdk_close(mems)
    done = consolidate_locally(corpus)
    out.print(f"\nConsolidation, local back-end in this process (no Kafka or Postgres), every session tagged with "
              f"the owner and its topic  [load {load()}]")  # fmt: skip
    out.print(f"   {done.episodes:,} episodes in {done.seconds:.2f} s = {done.rate:,.0f} episodes/s; emitted "
              f"{dict(sorted(done.events.items()))}")  # fmt: skip
    out.print("\nR@k: evidence sessions among the top-k distinct sessions of the hits; any@k: at least one; NDCG@10 "
              "binary; KU cur>sup: a hit of the newer value ranks above the superseded one (knowledge-update "
              "questions scored); leaks: hits dated after the question date (questions with one); abstain: on "
              "abstention questions, false abst.: on answerable ones (abstained, or confidence < "
              f"{ABSTAIN_BELOW}). Definitions: bench/memory_metrics.py.")  # fmt: skip
    out.print(f"load average at the end: {load()}")
    name = f"{len(corpus.users)}u" if args.dataset == "synthetic" or args.corpus else args.dataset
    path = args.out or RESULTS / f"memory-{started:%Y-%m-%d}-{name}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(out.export_text(), encoding="utf-8")
    progress.print(f"written to {path}")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
