"""The two phases of ``hivemem bench memory`` that drive the stack: the ingest (every session added, users in parallel,
then waited for; the held-back probes one by one for the write latency) and the questions of one search mode."""

from __future__ import annotations

import argparse
import contextlib
import random
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from bench.memory_corpus import Corpus
from bench.memory_metrics import Retrieval
from bench.memory_sdk import episode_id, sdk_add, sdk_search, sdk_searchable, sdk_wait

COLUMNS = (TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
           TimeElapsedColumn(), TimeRemainingColumn())  # fmt: skip


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


@dataclass
class ModeRun:
    mode: str
    results: list[Retrieval | None]
    client_ms: list[float]
    server_ms: list[float]
    errors: Counter[str]


# Questions each mode asks first, unmeasured (the query embedding, the connections).
WARM_UP = 5


def run_mode(corpus: Corpus, mems: dict[str, Any], mode: str, k: int, console: Console,
             nodes: str = "cite") -> ModeRun:  # fmt: skip
    run = ModeRun(mode, [], [], [], Counter())
    by_episode = {episode_id(s): s.session_id for u in corpus.users for s in u.sessions}
    for q in corpus.questions[:WARM_UP]:  # warm-up (query embedding, connections), unmeasured
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


@dataclass
class LoadRun:
    """One mode's questions asked by ``clients`` callers at once (``run_under_load``)."""

    clients: int
    seconds: float
    client_ms: list[float]
    errors: Counter[str]
    same: int  # questions whose hits name the same sessions in the same order as when asked one at a time
    compared: int  # questions answered both ways


def _sessions(r: Retrieval) -> tuple[tuple[str | None, tuple[str, ...]], ...]:
    return tuple((h.session_id, h.cited) for h in r.hits)


def run_under_load(corpus: Corpus, client_sets: list[dict[str, Any]], alone: ModeRun, k: int, console: Console,
                   nodes: str = "cite") -> LoadRun:  # fmt: skip
    """``alone``'s questions again, asked by ``len(client_sets)`` callers at once (each question by the next caller's
    own HTTP clients, as many agents would): searches a second, each search's client latency, the errors, and how
    many questions got the very hits they got one at a time (a search under load must answer as it does alone)."""
    by_episode = {episode_id(s): s.session_id for u in corpus.users for s in u.sessions}
    questions = corpus.questions
    results: list[Retrieval | None] = [None] * len(questions)
    run = LoadRun(len(client_sets), float("nan"), [], Counter(), 0, 0)
    lock = threading.Lock()
    with Progress(*COLUMNS, console=console) as bar:
        task = bar.add_task(f"questions ({alone.mode}) x{len(client_sets)}", total=len(questions), rate="")
        t0 = time.perf_counter()

        def one(i: int) -> None:
            q = questions[i]
            t = time.perf_counter()
            try:
                res, _ = sdk_search(client_sets[i % len(client_sets)][q.user_id], q, k, alone.mode, by_episode, nodes)
            except Exception as exc:
                with lock:
                    run.errors[str(getattr(exc, "code", type(exc).__name__))] += 1
                return
            ms = (time.perf_counter() - t) * 1000
            with lock:
                results[i] = res
                run.client_ms.append(ms)
                done = len(run.client_ms) + sum(run.errors.values())
            bar.update(task, completed=done, rate=f"{done / (time.perf_counter() - t0):6.1f}/s")

        with ThreadPoolExecutor(max_workers=len(client_sets)) as pool:
            list(pool.map(one, range(len(questions))))
        run.seconds = time.perf_counter() - t0
    pairs = [(a, b) for a, b in zip(alone.results, results, strict=True) if a is not None and b is not None]
    run.compared = len(pairs)
    run.same = sum(_sessions(a) == _sessions(b) for a, b in pairs)
    return run
