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
   p50/p95/p99 (client and server-reported). An L1-L3 node hit counts for the sessions of the episodes it cites
   (``--node-hits cite``, the default; ``skip``: L4 hits only);
5. HiveMem's modes beside the baseline (``bench.memory_compare``): recall@5/@10 and NDCG@10 per category and
   overall, and by how much each mode beats or trails the baseline.

Prints the figures and writes them to ``bench/results/memory-<date>-<users>u.txt`` (or ``--out``). Figures only:
nothing here asserts a level. Everything this bench calls on the SDK is in the "SDK" section below.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import random
import statistics
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import Producer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from bench import BENCHES, memory_baseline, memory_compare, vector_cache
from bench.memory_corpus import SHAPES, Corpus, Question, Session, parse_iso
from bench.memory_layers import consolidate_locally, l0_lookup_ms
from bench.memory_metrics import (
    ABSTAIN_BELOW,
    Gold,
    RankedHit,
    Retrieval,
    Scores,
    by_category,
    cited_sessions,
    percentile,
    score,
)
from bench.memory_public import DATASETS, ROLES, categories, load_corpus, locomo_note
from bench.pii import cpu_model
from bench.replay import timed_replay
from bench.run_settings import settings_line
from hivemem.settings import Settings

TENANT = "kmms-bench"
RESULTS = Path(__file__).resolve().parent / "results"
LETTERS = "abcdefghijkmnopqrstuvwxyz"
COLUMNS = (TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
           TimeElapsedColumn(), TimeRemainingColumn())  # fmt: skip


# --- SDK: every call this bench makes on producers.claw_client / producers.memory_client -------------------------


def open_memories(settings: Settings, tenant: str, user_ids: Sequence[str]) -> dict[str, Any]:
    """One claw per user (``mem-<user>``, its token bound to it) and that user's memory in it."""
    from governance.identity import HMAC_PREFIX, derive_deployment_key
    from producers.claw_client import ClawClient, producer_config
    from projections.auth import mint_token

    api = f"http://{settings.api_host}:{settings.api_port}"
    config = settings.load_config()
    secret_id, op_secret = next(iter(config.tenants[tenant].operator_secrets.items()))
    producer = Producer(producer_config(settings.require_kafka()))  # the claws' own writes (none here) share it
    out: dict[str, Any] = {}
    for uid in user_ids:
        claw_id = f"mem-{uid}"[:64]
        token = mint_token(config.token_secret, tenant, "bench", claw_id, ttl_s=12 * 3600)
        claw = ClawClient(settings.require_kafka(), tenant, claw_id, derive_deployment_key(op_secret, tenant, claw_id),
                          HMAC_PREFIX + secret_id, topics=settings.topics, producer=producer, api_url=api,
                          api_token=token)  # fmt: skip
        out[uid] = claw.memory(user_id=uid)
    return out


def l0_lookups(settings: Settings, tenant: str, corpus: Corpus) -> list[float]:
    """The L0 routing step timed on the stack's database, as the application role (ms per question)."""
    return l0_lookup_ms(settings.app_database_url(settings.load_config()), tenant, corpus)


def sdk_add(mem: Any, s: Session, wait_ms: int) -> tuple[str, str]:
    """(episode id, outcome): STORED | PENDING | the refusal's code (DUPLICATE_EPISODE on a re-run, ...)."""
    eid = episode_id(s)
    try:
        r = mem.add(s.messages(), session_id=s.session_id, occurred_at=s.occurred_at, episode_id=eid, wait_ms=wait_ms)
    except Exception as exc:  # the SDK's MemoryError_ carries .code
        code = getattr(exc, "code", None)
        if code is None:
            raise
        return eid, str(code)
    return str(r.episode_id), str(r.status)


def sdk_wait(mem: Any, episode_ids: Sequence[str], timeout_s: float) -> None:
    mem.wait_indexed(list(episode_ids), timeout_s)


def sdk_searchable(mem: Any, eid: str) -> bool:
    """One check (``wait_indexed`` with no time to wait checks once, then raises TimeoutError)."""
    try:
        mem.wait_indexed([eid], 0)
    except TimeoutError:
        return False
    return True


NODE_HITS = ("cite", "skip")


def _get(h: Any, name: str, camel: str) -> Any:
    """A hit's field, from the SDK's model or from a plain dict (a result field the SDK does not model yet)."""
    return h.get(camel, h.get(name)) if isinstance(h, dict) else getattr(h, name, None)


def sdk_search(mem: Any, q: Question, k: int, mode: str, by_episode: dict[str, str] | None = None,
               nodes: str = "cite") -> tuple[Retrieval, float | None]:  # fmt: skip
    """The question searched at its date: (the result for the metrics, the server-reported ms if any). Only the
    result's ``hits`` are ranked (not its ``context`` of derived nodes). An L4 hit is its episode's session. With
    ``nodes="cite"`` an L1-L3 node hit (summary, fact, abstraction) counts for the sessions of the episodes it cites:
    its ``sessionIds`` when the server lists them, else its ``sourceIds`` resolved through the nodes the result holds
    (its hits and its ``context``) down to episode ids, those of the corpus' sessions kept; with ``"skip"`` it counts
    for none (the bench before 2026-11-27)."""
    res = mem.search(q.question, k=k, as_of=q.question_date, mode=mode)
    by_episode = by_episode or {}
    held = [*res.hits, *(getattr(res, "context", None) or [])]
    sources = {str(_get(h, "node_id", "nodeId")): [str(x) for x in _get(h, "source_ids", "sourceIds") or []]
               for h in held if int(_get(h, "layer", "layer") or 4) < 4}  # fmt: skip

    def session_of(h: Any) -> str | None:
        if h.session_id:
            return str(h.session_id)
        eid = getattr(h, "episode_id", None)
        return by_episode.get(eid) if eid else None

    def sessions_cited(h: Any) -> tuple[str, ...]:
        told = [str(x) for x in getattr(h, "session_ids", None) or []]  # the server's own resolution, if given
        return tuple(dict.fromkeys(told)) if told else cited_sessions(h.source_ids or [], sources, by_episode)

    def cited(h: Any) -> tuple[str, ...]:
        return () if nodes != "cite" or int(h.layer) >= 4 else sessions_cited(h)

    hits = tuple(RankedHit(session_of(h), _dt(h.occurred_at), _dt(h.valid_from), h.fact_value, int(h.layer),
                           str(h.status), float(h.similarity), str(h.text)[:160], cited(h))
                 for h in res.hits)  # fmt: skip
    context = tuple(RankedHit(None, layer=int(h.layer), cited=sessions_cited(h))
                    for h in getattr(res, "context", None) or [])  # fmt: skip
    server = getattr(res, "latency_ms", None)
    found = Retrieval(hits, float(res.confidence), bool(res.abstained), context)
    return found, None if server is None else float(server)


def sdk_close(mems: dict[str, Any]) -> None:
    for m in mems.values():
        with contextlib.suppress(Exception):
            m.close()


# --- helpers ---------------------------------------------------------------------------------------------------


def _dt(v: Any) -> datetime | None:
    if v is None or isinstance(v, datetime):
        return v
    if isinstance(v, int | float):
        return datetime.fromtimestamp(v / 1000, UTC)
    return parse_iso(str(v))


def episode_id(s: Session) -> str:
    """Deterministic (a re-run finds the same episode) and letters only (no digit run for the PII scan)."""
    digest = hashlib.sha256(f"{s.user_id}|{s.session_id}|{s.occurred_at}".encode()).digest()
    return "ep-" + "".join(LETTERS[b % len(LETTERS)] for b in digest[:20])


def gold(q: Question) -> Gold:
    return Gold(q.category, parse_iso(q.question_date), tuple(q.evidence_session_ids), q.answer,
                q.current_session_id, q.superseded_value)  # fmt: skip


def dist(values: Sequence[float], unit: str = "ms", digits: int = 1) -> str:
    if not values:
        return "(no samples)"
    return (f"p50 {percentile(values, 0.5):.{digits}f} {unit}  p95 {percentile(values, 0.95):.{digits}f} {unit}  "
            f"p99 {percentile(values, 0.99):.{digits}f} {unit}  mean {statistics.fmean(values):.{digits}f} {unit}  "
            f"(n={len(values)})")  # fmt: skip


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _f(x: float, pct: bool = True) -> str:
    if x != x:  # NaN: nothing to score
        return "-"
    return f"{x:.1%}" if pct else f"{x:.3f}"


@contextlib.contextmanager
def stack(existing: bool) -> Iterator[tuple[Settings, str]]:
    """(settings, tenant): the running stack's (its first tenant unless HIVEMEM_BENCH_TENANT), or a temporary one."""
    if existing:
        settings = Settings.from_env()
        tenant = os.environ.get("HIVEMEM_BENCH_TENANT") or next(iter(settings.load_config().tenants))
        httpx.get(f"http://{settings.api_host}:{settings.api_port}/healthz", timeout=5).raise_for_status()
        yield settings, tenant
        return
    from bench.temp_stack import temporary_stack

    with temporary_stack({TENANT: True}, {TENANT: "enterprise"}) as settings:
        yield settings, TENANT


# --- ingest ----------------------------------------------------------------------------------------------------


@dataclass
class Ingest:
    sessions: int = 0
    seconds: float = float("nan")  # first add -> every episode searchable
    add_ms: list[float] = field(default_factory=list)  # bulk add calls (verdict included, under load)
    outcomes: Counter[str] = field(default_factory=Counter)
    unindexed: int = 0
    probe_add_ms: list[float] = field(default_factory=list)  # probes: the add call, quiet stack
    probe_searchable_ms: list[float] = field(default_factory=list)  # probes: add call -> searchable


STORED_LIKE = {"STORED", "PENDING", "DUPLICATE_EPISODE"}  # the episode (this id) is or will be there


def pick_probes(corpus: Corpus, count: int, seed: int) -> set[str]:
    """Distractor sessions held back from the bulk load and added one by one for the latency figure."""
    evidence = {e for q in corpus.questions for e in q.evidence_session_ids}
    pool = sorted(s.session_id for u in corpus.users for s in u.sessions
                  if s.role == "distractor" and s.session_id not in evidence)  # fmt: skip
    return set(random.Random(seed).sample(pool, min(count, len(pool))))


def ingest(corpus: Corpus, mems: dict[str, Any], args: argparse.Namespace, console: Console) -> Ingest:
    out = Ingest()
    probes = pick_probes(corpus, args.probes, args.seed + 1)
    bulk = {u.user_id: [s for s in u.sessions if s.session_id not in probes] for u in corpus.users}
    total = sum(map(len, bulk.values()))
    out.sessions = total + len(probes)
    lock = threading.Lock()
    added: dict[str, list[str]] = {uid: [] for uid in bulk}
    with Progress(*COLUMNS, console=console) as bar:
        t_add = bar.add_task("added (POST episodes)", total=total, rate="")
        t_idx = bar.add_task("searchable", total=total, rate="")
        t0 = time.perf_counter()

        def one_user(uid: str) -> None:
            for s in bulk[uid]:  # in time order: an agent adds its sessions as they happen
                t = time.perf_counter()
                eid, outcome = sdk_add(mems[uid], s, args.wait_ms)
                ms = (time.perf_counter() - t) * 1000
                with lock:
                    out.add_ms.append(ms)
                    out.outcomes[outcome] += 1
                    if outcome in STORED_LIKE:
                        added[uid].append(eid)
                    done = len(out.add_ms)
                bar.update(t_add, completed=done, rate=f"{done / (time.perf_counter() - t0):6.1f}/s")

        with ThreadPoolExecutor(max_workers=max(1, args.concurrency)) as pool:
            list(pool.map(one_user, bulk))
        searchable = 0
        for uid, ids in added.items():
            try:
                sdk_wait(mems[uid], ids, args.index_timeout)
                searchable += len(ids)
            except TimeoutError as exc:
                console.print(f"[red]{uid}: {exc}[/red]")
                out.unindexed += len(ids)
            bar.update(t_idx, completed=searchable, rate=f"{searchable / (time.perf_counter() - t0):6.1f}/s")
        out.seconds = time.perf_counter() - t0

        # L4 write latency: the held-back distractors one by one on the quiet stack
        t_probe = bar.add_task("latency probes", total=len(probes), rate="")
        sessions = corpus.sessions_by_id()
        for i, sid in enumerate(sorted(probes)):
            s = sessions[sid]
            t = time.perf_counter()
            eid, outcome = sdk_add(mems[s.user_id], s, args.wait_ms)
            out.probe_add_ms.append((time.perf_counter() - t) * 1000)
            out.outcomes[outcome] += 1
            if outcome in STORED_LIKE:
                deadline = time.monotonic() + 60
                while not sdk_searchable(mems[s.user_id], eid) and time.monotonic() < deadline:
                    time.sleep(0.01)
                if time.monotonic() < deadline:
                    out.probe_searchable_ms.append((time.perf_counter() - t) * 1000)
                else:
                    console.print(f"[red]{s.user_id}: session {sid} (episode {eid}) not searchable 60 s after its "
                                  "add[/red]")  # fmt: skip
                    out.unindexed += 1
            bar.update(t_probe, completed=i + 1)
    return out


# --- questions -------------------------------------------------------------------------------------------------


@dataclass
class ModeRun:
    mode: str
    results: list[Retrieval | None]
    client_ms: list[float]
    server_ms: list[float]
    errors: Counter[str]


def run_mode(corpus: Corpus, mems: dict[str, Any], mode: str, k: int, console: Console,
             nodes: str = "cite") -> ModeRun:  # fmt: skip
    run = ModeRun(mode, [], [], [], Counter())
    by_episode = {episode_id(s): s.session_id for u in corpus.users for s in u.sessions}
    for q in corpus.questions[:5]:  # warm-up (query embedding, connections), unmeasured
        with contextlib.suppress(Exception):
            sdk_search(mems[q.user_id], q, k, mode, by_episode, nodes)
    with Progress(*COLUMNS, console=console) as bar:
        task = bar.add_task(f"questions ({mode})", total=len(corpus.questions), rate="")
        t0 = time.perf_counter()
        for i, q in enumerate(corpus.questions):
            t = time.perf_counter()
            try:
                res, server = sdk_search(mems[q.user_id], q, k, mode, by_episode, nodes)
            except Exception as exc:
                run.errors[str(getattr(exc, "code", type(exc).__name__))] += 1
                run.results.append(None)
                if i == 4 and sum(run.errors.values()) == 5:
                    console.print(f"[red]{mode}: the first 5 searches failed ({dict(run.errors)}); mode skipped[/red]")
                    break
                continue
            run.client_ms.append((time.perf_counter() - t) * 1000)
            if server is not None:
                run.server_ms.append(server)
            run.results.append(res)
            bar.update(task, completed=i + 1, rate=f"{(i + 1) / (time.perf_counter() - t0):6.1f}/s")
    return run


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


def dump(path: Path, corpus: Corpus, run: ModeRun) -> None:
    """Append one JSON line per question: its gold (category, evidence, values) and the hits as ranked."""
    with path.open("a", encoding="utf-8") as f:
        for q, res in zip(corpus.questions, run.results, strict=False):
            hits = [] if res is None else [{"layer": h.layer, "session": h.session_id, "cited": list(h.cited),
                                             "value": h.fact_value, "status": h.status, "similarity": h.similarity,
                                             "text": h.text} for h in res.hits]  # fmt: skip
            f.write(
                json.dumps(
                    {
                        "mode": run.mode,
                        "question": q.question,
                        "category": q.category,
                        "date": str(q.question_date),
                        "evidence": list(q.evidence_session_ids),
                        "answer": q.answer,
                        "current": q.current_session_id,
                        "old": q.superseded_value,
                        "confidence": None if res is None else res.confidence,
                        "hits": hits,
                    }
                )
                + "\n"
            )


def table(mode: str, groups: dict[str, Scores], k: int) -> Table:
    t = Table(title=f"mode {mode}: search k={k}, as_of = question date", title_justify="left")
    for col in ("questions", "n", "R@1", "R@5", "R@10", "any@5", "any@10", "NDCG@10", "KU cur>sup", "leaks (q)",
                "abstain", "false abst."):  # fmt: skip
        t.add_column(col, justify="left" if col == "questions" else "right")
    for name, s in groups.items():
        ku = f"{_f(s.current_wins)} ({s.current_n})" if s.current_n else "-"
        t.add_row(name, str(s.n), _f(s.recall.get(1, float("nan"))), _f(s.recall.get(5, float("nan"))),
                  _f(s.recall.get(10, float("nan"))), _f(s.any_hit.get(5, float("nan"))),
                  _f(s.any_hit.get(10, float("nan"))), _f(s.ndcg10, pct=False), ku,
                  f"{s.leaks} ({s.leaking_questions})", _f(s.abstention), _f(s.false_abstention),
                  end_section=name == "point-in-time")  # fmt: skip
    return t


def score_run(corpus: Corpus, run: ModeRun) -> dict[str, Scores]:
    """Per category, the point-in-time questions, and overall, over the questions whose search answered (the
    failed ones are counted in ``run.errors`` and left out)."""
    done = [(q, r) for q, r in zip(corpus.questions, run.results, strict=False) if r is not None]
    golds = [gold(q) for q, _ in done]
    results = [r for _, r in done]
    groups = dict(by_category(golds, results, categories(corpus)))
    overall = groups.pop("overall")
    pit = [i for i, (q, _) in enumerate(done) if q.point_in_time]
    if pit:
        groups["point-in-time"] = score([golds[i] for i in pit], [results[i] for i in pit])
    groups["overall"] = overall
    return groups


def context_recall(corpus: Corpus, run: ModeRun) -> str:
    """The result's ``context`` (derived nodes) scored as hits are, by the sessions each node cites: how often what
    HiveMem derived points at the evidence. Not part of the tables above, which rank ``hits`` only."""
    done = [(q, r) for q, r in zip(corpus.questions, run.results, strict=False) if r is not None]
    s = score([gold(q) for q, _ in done], [Retrieval(r.context) for _, r in done])
    at = "  ".join(f"R@{k} {100 * s.recall[k]:.1f}%" for k in (5, 10) if k in s.recall)
    return f"context (derived nodes, by the sessions they cite), overall: {at}  (n={s.n})"


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


def baseline(corpus: Corpus, console: Console, cache_path: Path | None) -> memory_baseline.Baseline:
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

            return memory_baseline.run(corpus, embedder, progress=step, cache=cache)
    finally:
        if cache is not None:
            cache.close()


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
    progress = Console(stderr=True)  # progress on stderr; the figures on stdout and in the result file
    out = Console(record=True, width=150, markup=False, highlight=False)

    corpus = build_corpus(args)
    if args.save_corpus:
        corpus.save(args.save_corpus)
    cache_path = (args.baseline_cache or vector_cache.default_path()) if args.baseline_cache_on else None
    base = baseline(corpus, progress, cache_path) if args.baseline else None  # before the stack: the cores its own
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
    with stack(existing) as (settings, tenant):
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
                run = run_mode(corpus, mems, mode, args.k, progress, args.node_hits)
                runs.append(run)
                if args.dump:
                    dump(args.dump, corpus, run)
                groups = score_run(corpus, run)
                out.print(f"\n{n}. questions, mode {mode}  [load {load()}]"
                          + (f"  errors: {dict(run.errors)}" if run.errors else ""))  # fmt: skip
                out.print(f"   search latency, client (HTTP)   {dist(run.client_ms)}")
                out.print(f"   search latency, server-reported {dist(run.server_ms)}")
                out.print(table(mode, groups, args.k))
                out.print(f"   {context_recall(corpus, run)}")
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
