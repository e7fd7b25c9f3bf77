"""Episodes ranked by a learned score over what the first stage already holds (docs/kmms.md, "How the ranking was
chosen": the episode model).

The first stage fuses two unit rankings (vectors, full text) by reciprocal rank, and an episode took the place of
its best unit. That listens to one unit of each episode and to ranks only. ``rank_by_episode`` scores each episode
by a logistic model of seven features, all read off the two rankings the first stage has anyway:

- ``fused1``, ``fused2``: its best and second-best unit's fused score (an episode two of whose rounds match tells
  of the question's subject, not of one of its words);
- ``bm1``, ``bm2``: its best and second-best unit's BM25 score over the best candidate's (0 without full text): how
  far ahead a unit is, which ranks alone do not say;
- ``cos_gap``: its best unit's similarity less the best candidate's (a unit not among the vector candidates counts
  the lowest similarity among them);
- ``text_rank``, ``vector_rank``: ``1 / (k + rank)`` of its best unit in each ranking (0 where absent), which
  weigh against ``fused1``: a unit first in one ranking only is worth less than its fused score says;
- with the question read word by word against the first stage's best rounds (``governance.kmms.late``: each round
  with its neighbours, from the embedding model's token states), two more: ``late_gap``, its best round's reading
  less the best candidate's (``LATE_ABSENT`` for an episode with no round among those read), and ``late_rank``,
  ``1 / (k + rank)`` of its best round in that reading's order (0 where absent).

The weights are a logistic regression fitted on LoCoMo's 1,532 questions through HiveMem's own first stage
(``hivemem bench episode_model``; an episode is positive when it is one of the question's evidence sessions) with
the first stage's defaults (rrf k = 10, full text and vectors 1 : 1, the neighbours in full text), and applied
unchanged to REALTALK and LongMemEval-S, which chose nothing: ``LOCOMO_LATE_WEIGHTS`` with the word-by-word
reading, ``LOCOMO_WEIGHTS`` without it (its two weights 0: a memory embedded before token states were kept, or by
a model that gives none). An episode's score is the model's probability that it is evidence. Pure: same rankings,
same order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

from governance.kmms import units


@dataclass(frozen=True)
class EpisodeFeatures:
    fused1: float
    fused2: float
    bm1: float
    bm2: float
    cos_gap: float
    text_rank: float
    vector_rank: float
    late_gap: float = 0.0
    late_rank: float = 0.0

    def score(self, w: EpisodeWeights) -> float:
        """The model's log-odds that the episode is evidence."""
        return math.fsum([*(getattr(w, f.name) * getattr(self, f.name) for f in fields(EpisodeFeatures)),
                          w.intercept])  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class EpisodeWeights(EpisodeFeatures):
    """The logistic model's weight on each raw feature (``EpisodeFeatures``' fields) and its intercept."""

    intercept: float


# Fitted on LoCoMo (a logistic regression with an L2 penalty, C = 1, on standardised features, turned back to raw
# ones; 43,326 (first stage, candidate episode) pairs). docs/kmms.md gives the protocol and the figures.
LOCOMO_WEIGHTS = EpisodeWeights(fused1=18.779, fused2=17.741, bm1=5.057, bm2=-2.037, cos_gap=5.477,
                                text_rank=-21.249, vector_rank=-13.956, intercept=-4.887)  # fmt: skip
# The same fit with the word-by-word reading's two features (``hivemem bench episode_model --dataset locomo``,
# 2026-12-05: 43,418 pairs; the weights fitted on either half of the conversations scored the other at session
# recall@5 0.8975).
LOCOMO_LATE_WEIGHTS = EpisodeWeights(fused1=13.048, fused2=15.386, bm1=3.222, bm2=-1.919, cos_gap=2.665,
                                     text_rank=-16.116, vector_rank=-12.153, late_gap=6.354, late_rank=12.827,
                                     intercept=-3.531)  # fmt: skip
# An episode none of whose rounds was read word by word: its reading counts this far below the best candidate's.
LATE_ABSENT = -0.3


def _episodes(*lists: Sequence[tuple[str, float]]) -> dict[str, str]:
    """Each unit's episode (``episode_of``), once per unit of ``lists``."""
    return {u: units.episode_of(u) for ranked in lists for u, _ in ranked}


def episode_features(fused: Sequence[tuple[str, float]], similar: Sequence[tuple[str, float]],
                     bm25: Sequence[tuple[str, float]], k: int, episodes: dict[str, str] | None = None,
                     late: Mapping[str, float] | None = None) -> dict[str, EpisodeFeatures]:  # fmt: skip
    """Each episode's features (module docstring) from the fused units (unit id, score), the vector ranking (unit
    id, similarity; best first) and full text's (unit id, BM25 score; best first), with the fusion's ``k``;
    ``episodes``: each unit's episode, when the caller has them (``_episodes``); ``late``: the word-by-word reading
    of the rounds read so (``governance.kmms.late.window_maxsim``), None when there is none."""
    episode_of = (episodes or _episodes(fused, similar, bm25)).__getitem__
    fused_of: dict[str, list[float]] = {}
    for unit, s in fused:
        fused_of.setdefault(episode_of(unit), []).append(s)
    sims: dict[str, float] = {}
    v_rank: dict[str, int] = {}
    for rank, (unit, sim) in enumerate(similar, start=1):
        e = episode_of(unit)
        if e not in v_rank:  # best first: an episode's first row is its best
            sims[e], v_rank[e] = sim, rank
    texts: dict[str, list[float]] = {}
    t_rank: dict[str, int] = {}
    for rank, (unit, s) in enumerate(bm25, start=1):
        e = episode_of(unit)
        texts.setdefault(e, []).append(s)
        t_rank.setdefault(e, rank)
    top_sim = max(sims.values(), default=0.0)
    low_sim = min(sims.values(), default=0.0)
    top_bm = max((s for ss in texts.values() for s in ss), default=0.0)
    late_best: dict[str, float] = {}
    late_at: dict[str, int] = {}
    read = late or {}
    top_late = max(read.values(), default=0.0)
    for rank, unit in enumerate(sorted(read, key=lambda u: (-read[u], u)), start=1):
        e = units.episode_of(unit)
        if e not in late_at:
            late_best[e], late_at[e] = read[unit], rank
    out: dict[str, EpisodeFeatures] = {}
    for e, scores in fused_of.items():
        f = [*sorted(scores, reverse=True), 0.0]
        b = [*sorted(texts.get(e, []), reverse=True), 0.0, 0.0]
        out[e] = EpisodeFeatures(
            fused1=f[0], fused2=f[1],
            bm1=b[0] / top_bm if top_bm > 0 else 0.0, bm2=b[1] / top_bm if top_bm > 0 else 0.0,
            cos_gap=sims.get(e, low_sim) - top_sim,
            text_rank=1.0 / (k + t_rank[e]) if e in t_rank else 0.0,
            vector_rank=1.0 / (k + v_rank[e]) if e in v_rank else 0.0,
            late_gap=(late_best[e] - top_late if e in late_best else LATE_ABSENT) if read else 0.0,
            late_rank=1.0 / (k + late_at[e]) if e in late_at else 0.0,
        )  # fmt: skip
    return out


def _probability(log_odds: float) -> float:
    """The logistic of ``log_odds``, clamped where ``math.exp`` would overflow (weights a fit gives a
    ``hivemem bench episode_model`` run can be far from the shipped ones)."""
    return 1.0 / (1.0 + math.exp(-max(-700.0, min(700.0, log_odds))))


def rank_by_episode(fused: Sequence[tuple[str, float]], similar: Sequence[tuple[str, float]],
                    bm25: Sequence[tuple[str, float]], k: int, weights: EpisodeWeights | None = None,
                    late: Mapping[str, float] | None = None) -> list[tuple[str, float]]:  # fmt: skip
    """The fused units (unit id, fused score; best first) with new scores, best first (ties by unit id): an
    episode's best unit scores the episode's probability of being evidence, each other unit of it that times its
    share of the best unit's fused score. So the episodes' best units come in the order of their probabilities,
    and each episode's units in their fused order. ``weights``: by default ``LOCOMO_LATE_WEIGHTS`` given a
    word-by-word reading (``late``), ``LOCOMO_WEIGHTS`` without."""
    weights = weights or (LOCOMO_LATE_WEIGHTS if late else LOCOMO_WEIGHTS)
    episodes = _episodes(fused, similar, bm25)
    features = episode_features(fused, similar, bm25, k, episodes, late)
    prob = {e: _probability(f.score(weights)) for e, f in features.items()}
    best: dict[str, float] = {}
    for unit, s in fused:
        best.setdefault(episodes[unit], s)
    out = [(unit, prob[e] * (s / best[e] if best[e] > 0 else 1.0)) for unit, s in fused for e in (episodes[unit],)]
    return sorted(out, key=lambda t: (-t[1], t[0]))
