"""The episode model's weights (governance/kmms/episode_rank.py), fitted on a public corpus and checked on it:
``hivemem bench episode_model --dataset locomo --file locomo10.json`` against a running stack that holds the corpus
(ingested by ``hivemem bench memory --existing --dataset locomo --file locomo10.json``; tenant HIVEMEM_BENCH_TENANT
or the tenants file's first, one memory per user as that bench makes them).

1. Every question is searched in this process as the API searches it (the question read once, embedded without
   the memory's speakers' names, with its token states when the model gives them, k = 50, ``asOf`` the question's
   date), with the episode model on and the shipped weights; each first stage's lists (the fused units, the vector
   ranking with similarities, full text's with BM25 scores, and the word-by-word reading of its first rounds:
   ``rank_by_episode``'s arguments) are kept.
2. ``episode_features`` of each candidate episode; an episode is positive when its session is one of the
   question's evidence sessions. A logistic regression with an L2 penalty (C = 1) on standardised features, fitted
   by Newton's method, is turned back into weights on the raw features: ``EpisodeWeights(...)`` is printed (the
   word-by-word features' weights 0 when the memory holds no token states).
3. The same questions searched again: with weights fitted on the other half of the memories (users sorted, the
   first half and the second: two folds, each scored by weights that never saw it), with the weights fitted on
   all of them (a figure on the corpus they were fitted on: report them on another, ``hivemem bench memory``),
   and with the model off: session recall@5 / @10, side by side.

The shipped weights came from ``--dataset locomo`` (docs/kmms.md, "How the ranking was chosen"). Any public corpus of
the memory bench can be read (``--dataset realmem``, ``beam``...), and a LongMemEval draw as that bench draws it
(``--sample N --sample-skip M``).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress

from bench import BENCHES
from bench.memory_metrics import recall_at
from bench.memory_public import DATASETS, Corpus, load_corpus
from governance.kmms import episode_rank
from governance.kmms.episode_rank import EpisodeFeatures, EpisodeWeights, episode_features
from inference.embedding_base import TokenStatesEmbedder

FEATURES = [f.name for f in fields(EpisodeFeatures)]
K = 50  # hits per search, as the memory bench asks


@dataclass
class Asked:
    evidence: list[str]
    sessions: list[str]  # the hits' distinct sessions, in order
    calls: list[tuple[Any, ...]]  # rank_by_episode's arguments, one per first stage run


# Weights for a question's memory (its user id); None: the shipped ones.
Chooser = Callable[[str], EpisodeWeights | None]


@contextmanager
def kept_rankings(into: list[tuple[Any, ...]], weights: Callable[[], EpisodeWeights | None]) -> Iterator[None]:
    """The search's ``rank_by_episode`` run with ``weights()`` (None: the shipped ones), its arguments appended to
    ``into``."""
    from governance.kmms import ranking

    shipped = ranking.rank_by_episode

    def keep(fused: Sequence[tuple[str, float]], similar: Sequence[tuple[str, float]],
             bm25: Sequence[tuple[str, float]], k: int, weights_: EpisodeWeights | None = None,
             late: Mapping[str, float] | None = None) -> list[tuple[str, float]]:  # fmt: skip
        into.append((list(fused), list(similar), list(bm25), k, dict(late) if late else None))
        return episode_rank.rank_by_episode(fused, similar, bm25, k, weights(), late=late)

    ranking.rank_by_episode = keep  # type: ignore[assignment]
    try:
        yield
    finally:
        ranking.rank_by_episode = shipped


async def ask_all(corpus: Corpus, choose: Chooser | None, tenant: str, console: Console,
                  label: str) -> tuple[list[Asked], dict[str, str]]:  # fmt: skip
    """Every question searched in process with the weights ``choose`` gives its memory (``choose`` None: the model
    off); and each episode's session."""
    from psycopg_pool import AsyncConnectionPool

    from hivemem.caml_wiring import embedder
    from hivemem.settings import Settings, search_config_from_env
    from projections.kmms import queries as q
    from projections.kmms.search import Memory
    from projections.kmms.speakers import embedded_question
    from projections.queries import tenant_tx
    from projections.vectors import hnsw_session

    settings = Settings.from_env()
    cfg = replace(search_config_from_env(os.environ), episode_model=choose is not None)
    emb = embedder()
    out: list[Asked] = []
    calls: list[tuple[Any, ...]] = []
    user = [""]
    url = settings.app_database_url(settings.load_config())
    async with AsyncConnectionPool(url, min_size=1, max_size=8, open=False, configure=hnsw_session) as pool:
        with kept_rankings(calls, lambda: choose(user[0]) if choose else None), Progress(console=console) as bar:
            task = bar.add_task(label, total=len(corpus.questions))
            for x in corpus.questions:
                at = int(datetime.fromisoformat(x.question_date.replace("Z", "+00:00")).timestamp() * 1000)
                m = Memory(tenant, f"mem-{x.user_id}"[:64], x.user_id)
                question = q.read_question(x.question, at)
                text = await embedded_question(pool, m, question.text, cfg.speaker_names)
                first = len(calls)
                user[0] = x.user_id
                vector, tokens = (emb.query_with_tokens(text) if isinstance(emb, TokenStatesEmbedder)
                                  else (emb.embed_query(text), None))  # fmt: skip
                params = q.SearchParams(x.question, vector, emb.model_id, K, at, "hybrid", cfg.tau, cfg.abstain_below,
                                        question, tokens)  # fmt: skip
                r = await q.search(pool, m, params, cfg)
                sessions = list(dict.fromkeys(h.session_id for h in r.hits if h.session_id))
                out.append(Asked(list(x.evidence_session_ids), sessions, calls[first:]))
                bar.advance(task)
        async with tenant_tx(pool, tenant) as conn:
            cur = await conn.execute("SELECT DISTINCT episode_id, session_id FROM kmms.kmms_units")
            sessions_of = {str(a): str(b) for a, b in await cur.fetchall()}
    return out, sessions_of


def examples(asked: list[Asked], session_of: dict[str, str]) -> tuple[np.ndarray, np.ndarray]:
    """(features, label) of every candidate episode of every first stage."""
    xs, ys = [], []
    for a in asked:
        for fused, similar, bm25, k, late in a.calls:
            for episode, f in episode_features(fused, similar, bm25, k, late=late).items():
                xs.append([getattr(f, n) for n in FEATURES])
                ys.append(1.0 if session_of.get(episode) in a.evidence else 0.0)
    return np.array(xs, dtype=np.float64).reshape(-1, len(FEATURES)), np.array(ys)


def fit(x: np.ndarray, y: np.ndarray, c: float = 1.0, steps: int = 50) -> EpisodeWeights:
    """Logistic regression, L2 penalty (C = ``c``, the intercept not penalised), on standardised features by
    Newton's method; the weights turned back to the raw features."""
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    penalty = np.eye(z.shape[1])
    penalty[-1, -1] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        grad = c * z.T @ (p - y) + penalty @ w
        hess = c * (z.T * (p * (1 - p))) @ z + penalty
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.abs(step).max()) < 1e-10:
            break
    raw = w[:-1] / scale
    named = dict(zip(FEATURES, (float(v) for v in raw), strict=True))
    return EpisodeWeights(**named, intercept=float(w[-1] - (w[:-1] * mean / scale).sum()))


def users_of(asked: list[Asked], corpus: Corpus, users: set[str], inside: bool) -> list[int]:
    """The indices of ``asked`` (in ``corpus.questions``' order) whose memory is (``inside``) or is not in ``users``."""
    return [i for i, q in enumerate(corpus.questions[: len(asked)]) if (q.user_id in users) == inside]


def recall(asked: list[Asked], k: int) -> float:
    """Session recall@k (``memory_metrics.recall_at``) averaged over the questions with evidence."""
    scored = [r for a in asked if (r := recall_at(a.sessions, a.evidence, k)) is not None]
    return sum(scored) / len(scored) if scored else math.nan


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="hivemem bench episode_model", description=BENCHES["episode_model"])
    ap.add_argument("--dataset", choices=[d for d in DATASETS if d != "synthetic"], required=True,
                    help="the public corpus the running stack holds (`hivemem bench memory` ingested it)")  # fmt: skip
    ap.add_argument("--file", type=Path, required=True,
                    help="the corpus' file (REALTALK, RealMem: its data folder; BEAM: a scale's)")  # fmt: skip
    ap.add_argument("--limit", type=int, default=None,
                    help="LongMemEval: its first N questions; the others: their first N chats (files)")  # fmt: skip
    ap.add_argument("--sample", type=int, default=None, metavar="N",
                    help="LongMemEval: N questions drawn as `hivemem bench memory --sample N` draws them")  # fmt: skip
    ap.add_argument("--sample-skip", type=int, default=0, metavar="M", help="with --sample: from the M-th on")
    args = ap.parse_args(argv)
    console = Console()
    try:
        corpus = load_corpus(args.dataset, args.file, limit=args.limit, sample=args.sample,
                             sample_skip=args.sample_skip)  # fmt: skip
    except (ValueError, OSError) as e:
        console.print(f"[red]BAD_ARGUMENT[/red]: {escape(str(e))}", soft_wrap=True)  # whole: a path is not cut in two
        return 2
    from hivemem.settings import Settings

    tenant = os.environ.get("HIVEMEM_BENCH_TENANT") or next(iter(Settings.from_env().load_config().tenants))
    shipped, session_of = asyncio.run(ask_all(corpus, lambda _: None, tenant, console, "shipped weights"))
    x, y = examples(shipped, session_of)
    if not y.any():
        console.print("[red]NO_EVIDENCE[/red]: no candidate episode holds an evidence session: is the corpus "
                      f"ingested in tenant {tenant!r}?")  # fmt: skip
        return 2
    fitted = fit(x, y)
    console.print(f"{len(y):,} candidate episodes of {len(shipped):,} questions, {int(y.sum()):,} of them evidence")
    console.print("fitted: EpisodeWeights(" + ", ".join(f"{f.name}={getattr(fitted, f.name):.3f}"
                                                      for f in fields(EpisodeWeights)) + ")")  # fmt: skip
    # Two folds by memory: each half scored by weights fitted on the other.
    users = sorted({q.user_id for q in corpus.questions})
    first = set(users[: len(users) // 2])
    half = [users_of(shipped, corpus, first, inside) for inside in (True, False)]
    folds = [fit(*examples([shipped[i] for i in rows], session_of)) for rows in half]  # fitted on each half
    held, _ = asyncio.run(ask_all(corpus, lambda u: folds[1] if u in first else folds[0], tenant, console,
                                  "held-out weights"))  # fmt: skip
    again, _ = asyncio.run(ask_all(corpus, lambda _: fitted, tenant, console, "fitted weights"))
    off, _ = asyncio.run(ask_all(corpus, None, tenant, console, "model off"))
    for name, asked in (("shipped weights", shipped), ("weights fitted on the other half", held),
                        ("fitted weights (on this corpus)", again), ("model off", off)):  # fmt: skip
        console.print(f"{name:34s} session recall@5 {recall(asked, 5):.4f}  @10 {recall(asked, 10):.4f}")
    return 0
