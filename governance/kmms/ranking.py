"""The search's first-stage ranking, pure: what SQL fetched for a question in, the order of its units out.

SQL (``projections.kmms.search``, ``projections.kmms.nearest``) fetches each span of time's candidates: the nearest
vectors, one (unit, cosine distance) row per vector, and full text's units with their BM25 scores
(``Fetched``). The rules here order them, driven by one ``SearchConfig``:

1. ``fuse``: a span's two rankings fused by reciprocal rank (``fused_ranking``; k = ``rrf_k``, full text weighted
   ``text_weight`` against the vectors' 1; ``fusion_weights``), then its episodes ranked by the learned score of
   ``governance.kmms.episode_rank`` (``ranked``: ``episode_model``; hybrid searches), cut to the ``n`` best units.
   Given the question's token states, the episode model also reads the fused ranking's first rounds word by word
   (``governance.kmms.late``): ``late_candidates`` names the rounds whose states the caller reads for it, between
   ``fused_ranking`` and ``ranked``.
2. ``window_order``: a question with a time window has two spans, the window's and all time's; the window's units
   join all time's as a reciprocal-rank list of ``window_weight`` (``window_fused``), or, with ``window_weight`` 0,
   come first, then the rest of time's (``window_first``).
3. ``best_units``: each episode by its best unit, the order the hits are shown in.

The units the rules order are the caller's (``projections.kmms.search.UnitHit``, read after step 1): anything with a
unit and episode id and a fused score (``Ranked``). Same input, same order: ties are broken by unit id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, ClassVar, Literal, Protocol, TypeVar

from governance.kmms.episode_rank import rank_by_episode
from governance.kmms.fusion import rrf
from governance.kmms.late import CANDIDATES, LateStates, window_maxsim
from governance.kmms.search_config import DEFAULT, SearchConfig

Mode = Literal["hybrid", "vector", "text"]


@dataclass(frozen=True)
class Fetched:
    """One span of time's candidates as SQL returned them. ``nearest``: one (unit, cosine distance)
    row per vector, nearest first, so a unit's first row is its best (its own vector's or a sentence's); ``text``:
    (unit, BM25 score), best first. None: that ranking did not run (the mode, or no question vector or words).
    ``exact``: the distances are exact, so they are the units' similarities."""

    nearest: Sequence[tuple[str, float]] | None
    text: Sequence[tuple[str, float]] | None
    exact: bool = False

    @cached_property
    def best_distances(self) -> dict[str, float]:
        """Each unit's best (first) distance, nearest first (read once: the fusion and the caller both need it)."""
        best: dict[str, float] = {}
        for unit, d in self.nearest or ():
            best.setdefault(unit, d)
        return best


def fusion_weights(rankings: Sequence[Sequence[str]], mode: Mode, text_weight: float) -> list[float] | None:
    """RRF weights: hybrid with both rankings gives the full-text one ``text_weight`` (the vectors' 1)."""
    return [1.0, text_weight] if mode == "hybrid" and len(rankings) == 2 else None


def fused_ranking(fetched: Fetched, mode: Mode, n: int,
                  cfg: SearchConfig = DEFAULT) -> tuple[list[tuple[str, float]], bool]:  # fmt: skip
    """A span's two rankings (the vectors' cut to its ``n`` nearest units) fused by reciprocal rank, and whether the
    episode model ranks them (hybrid, both ran)."""
    best = fetched.best_distances
    rankings: list[list[str]] = []
    if fetched.nearest is not None:
        rankings.append(list(best)[:n])
    if fetched.text is not None:
        rankings.append([u for u, _ in fetched.text])
    fused = rrf(rankings, k=cfg.rrf_k, weights=fusion_weights(rankings, mode, cfg.text_weight))
    return fused, cfg.episode_model and len(rankings) == 2 and fetched.text is not None


def late_candidates(first: tuple[list[tuple[str, float]], bool]) -> list[str]:
    """The rounds the episode model reads word by word: the first ``CANDIDATES`` of a span's ``fused_ranking``;
    none when the episode model does not rank the span."""
    fused, modelled = first
    return _first_rounds(fused) if modelled else []


def fuse(fetched: Fetched, mode: Mode, n: int, cfg: SearchConfig = DEFAULT) -> list[tuple[str, float]]:
    """A span's ``n`` best units with their scores, best first (``ranked`` of its ``fused_ranking``), without the
    word-by-word reading."""
    return ranked(fetched, fused_ranking(fetched, mode, n, cfg), n, cfg)


def ranked(fetched: Fetched, first: tuple[list[tuple[str, float]], bool], n: int, cfg: SearchConfig = DEFAULT,
           late: LateStates | None = None) -> list[tuple[str, float]]:  # fmt: skip
    """A span's ``n`` best units with their scores, best first, from its ``fused_ranking`` (``first``): the vectors'
    ranking (each unit by its best vector) and full text's fused by reciprocal rank, then, with both and
    ``cfg.episode_model``, each episode scored by its probability of being evidence (``rank_by_episode``).
    ``late``: the question's token states and the token states read for ``late_candidates`` (by unit id;
    ``governance.kmms.late``); the reading counts only when every candidate has its own."""
    fused, modelled = first
    if modelled and fetched.text is not None:
        read = _late_reading(fused, late)
        sims = [(u, 1.0 - d) for u, d in fetched.best_distances.items()]
        fused = rank_by_episode(fused, sims, fetched.text, cfg.rrf_k, late=read)
    return fused[:n]


def _first_rounds(fused: Sequence[tuple[str, float]]) -> list[str]:
    return [u for u, _ in fused[:CANDIDATES]]


def _late_reading(fused: Sequence[tuple[str, float]], late: LateStates | None) -> dict[str, float] | None:
    """``window_maxsim`` of the fused ranking's first rounds, or None (no question states, or a candidate without
    states of its own: a memory embedded before they were kept, or a round whose vector is not in yet)."""
    if late is None:
        return None
    question, states = late
    candidates = _first_rounds(fused)
    if not candidates or any(u not in states for u in candidates):
        return None
    read = window_maxsim(question, candidates, states)
    return read if len(read) == len(candidates) else None


class Ranked(Protocol):
    """A unit the rules order (a frozen dataclass: ``window_fused`` gives it its new score)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def unit_id(self) -> str: ...

    @property
    def episode_id(self) -> str: ...

    @property
    def fused(self) -> float: ...


R = TypeVar("R", bound=Ranked)


def window_first(window: list[R], rest: list[R]) -> list[R]:
    """A time window's units first, then the rest of time's (``window_weight`` 0)."""
    seen = {u.unit_id for u in window}
    return [*window, *(u for u in rest if u.unit_id not in seen)]


def window_fused(window: list[R], rest: list[R], weight: float, k: int) -> list[R]:
    """The window's ranking fused into all time's (``rest``, which holds the window's units too) as a
    reciprocal-rank list of ``weight`` against all time's 1: a unit of the window gains, one outside it keeps what
    all time's ranking gives it. Each unit's ``fused`` becomes its score here."""
    units = {u.unit_id: u for u in (*rest, *window)}
    fused = rrf([[u.unit_id for u in rest], [u.unit_id for u in window]], k, [1.0, weight])
    return [replace(units[i], fused=s) for i, s in fused]


def window_order(window: list[R], rest: list[R], cfg: SearchConfig = DEFAULT) -> list[R]:
    """A question's time window and all time, in one order (module docstring, step 2)."""
    if cfg.window_weight > 0:
        return window_fused(window, rest, cfg.window_weight, cfg.rrf_k)
    return window_first(window, rest)


def best_units(units: list[R]) -> list[R]:
    """Each episode's best unit, ranked (the episode's place is its best unit's; ``units`` in fused order, so an
    episode's first is its best)."""
    best: dict[str, R] = {}
    for u in units:
        best.setdefault(u.episode_id, u)
    return list(best.values())
