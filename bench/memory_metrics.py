"""Retrieval metrics for the long-memory benchmark (``bench.memory``): pure functions over ranked hits.

A search result is reduced to a ``Retrieval``: its hits in rank order (``RankedHit``: the source session, the
event and validity times, the L2 fact value if any), its overall confidence and whether it abstained. Definitions:

* **ranked sessions**: the distinct sessions of the hits, in order of their first appearance: an L4 hit's
  ``session_id``, then an L1-L3 node hit's ``cited`` sessions (the sessions of the episodes it cites, its
  ``sourceIds`` resolved down to episodes through the nodes the search result holds: ``cited_sessions``; empty
  when the bench skips nodes, ``--node-hits skip``); a hit with neither adds nothing. "top-k sessions" is the first
  ``k`` of them.
* **session recall@k** = |top-k sessions ∩ evidence| / |evidence| (questions with evidence only); **any-hit@k** =
  1 if top-k sessions ∩ evidence is non-empty, else 0. Both averaged over questions.
* **NDCG@k** (binary relevance over the ranked sessions): DCG = Σ_{i=1..k} rel_i / log2(i + 1), ideal DCG =
  Σ_{i=1..min(|evidence|, k)} 1 / log2(i + 1), NDCG = DCG / IDCG.
* **current-vs-superseded** (knowledge-update questions with a ``current_session_id``: the generated corpus's, with
  a ``superseded_value`` too, and LongMemEval's of two evidence sessions or more, whose latest is the current one):
  each hit is labelled CURRENT, SUPERSEDED or neither. A hit with an L2 ``fact_value`` is labelled by value: CURRENT
  if it matches the expected (newer) answer, SUPERSEDED if it matches the superseded value (a match is a whole-word
  phrase containment either way after case folding, dropping punctuation and the articles a/an/the: "a Kia Niro"
  matches "Kia Niro"); a hit whose value matches neither, or that has no value, is labelled by session: CURRENT if
  its session is ``current_session_id``, SUPERSEDED if it is another evidence session. Correct iff a CURRENT hit
  exists and comes before the first SUPERSEDED one (no SUPERSEDED hit at all is fine). So a top hit from the current
  session counts as correct, and so does the current L2 fact ranked above the superseded version.
* **future leak**: a hit whose ``occurred_at`` or ``valid_from`` is strictly after the question date (it cannot
  have been known then; must be 0). Counted per hit; a question "leaks" if it has at least one.
* **abstained** = the result says so, or its confidence is below ``ABSTAIN_BELOW`` (0.5). Abstention rate over the
  abstention questions (higher is better); false-abstention rate over the answerable ones (lower is better).
* Every category is scored by its evidence sessions (recall, any-hit, NDCG): ``single-session-assistant`` (the
  answer is in an assistant reply) like ``single-session``; current-vs-superseded only applies to knowledge-update
  and the abstention rate only to abstention (the other categories count towards false abstention).
* **percentile** (latencies): ``bench.figures.percentile``, the nearest-rank value
  ``sorted(xs)[min(n - 1, int(p * n))]``, as in every bench.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

ABSTAIN_BELOW = 0.5
KS = (1, 5, 10)


@dataclass(frozen=True)
class RankedHit:
    session_id: str | None
    occurred_at: datetime | None = None
    valid_from: datetime | None = None
    fact_value: str | None = None
    layer: int = 4
    status: str = "CURRENT"
    similarity: float = 0.0  # for --dump only
    text: str = ""
    cited: tuple[str, ...] = ()  # an L1-L3 node's sessions: those of the episodes it cites (``cited_sessions``)


@dataclass(frozen=True)
class Retrieval:
    hits: tuple[RankedHit, ...]
    confidence: float = 1.0
    abstained: bool = False
    context: tuple[RankedHit, ...] = ()  # the result's derived nodes (L1-L3), each with the sessions it cites


@dataclass(frozen=True)
class Gold:
    """What a question expects (the corpus ``Question`` reduced to what scoring needs)."""

    category: str
    question_date: datetime
    evidence: tuple[str, ...]
    answer: str = ""
    current_session_id: str | None = None
    superseded_value: str | None = None


# --- per question ----------------------------------------------------------------------------------------------


def ranked_sessions(hits: Iterable[RankedHit]) -> list[str]:
    out: list[str] = []
    for h in hits:
        for s in (h.session_id, *h.cited):
            if s and s not in out:
                out.append(s)
    return out


def cited_episodes(source_ids: Iterable[str], sources_by_node: Mapping[str, Sequence[str]]) -> list[str]:
    """A node's ``sourceIds`` resolved down to episode ids, depth first in their order: an id that is a node of
    ``sources_by_node`` (a node the search result holds, with its own ``sourceIds``) stands for its sources, any
    other id is taken as an episode id. A cycle or a repeat adds nothing."""
    out: list[str] = []
    seen: set[str] = set()

    def walk(ids: Iterable[str]) -> None:
        for i in ids:
            if i in seen:
                continue
            seen.add(i)
            if i in sources_by_node:
                walk(sources_by_node[i])
            else:
                out.append(i)

    walk(source_ids)
    return out


def cited_sessions(source_ids: Iterable[str], sources_by_node: Mapping[str, Sequence[str]],
                   session_by_episode: Mapping[str, str]) -> tuple[str, ...]:  # fmt: skip
    """The distinct sessions of the episodes a node cites (``cited_episodes``), in that order; ids that are no
    known episode (a node the result does not hold, say) are dropped."""
    out: list[str] = []
    for e in cited_episodes(source_ids, sources_by_node):
        s = session_by_episode.get(e)
        if s and s not in out:
            out.append(s)
    return tuple(out)


def recall_at(sessions: Sequence[str], evidence: Iterable[str], k: int) -> float | None:
    ev = set(evidence)
    if not ev:
        return None
    return len(set(sessions[:k]) & ev) / len(ev)


def any_hit_at(sessions: Sequence[str], evidence: Iterable[str], k: int) -> float | None:
    ev = set(evidence)
    if not ev:
        return None
    return 1.0 if set(sessions[:k]) & ev else 0.0


def ndcg_at(sessions: Sequence[str], evidence: Iterable[str], k: int = 10) -> float | None:
    ev = set(evidence)
    if not ev:
        return None
    dcg = sum(1.0 / math.log2(i + 2) for i, s in enumerate(sessions[:k]) if s in ev)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(ev), k)))
    return dcg / ideal


_ARTICLES = {"a", "an", "the"}


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"\w+", text.casefold()) if w not in _ARTICLES]


def _contains(hay: Sequence[str], needle: Sequence[str]) -> bool:
    n = len(needle)
    return n > 0 and any(list(hay[i : i + n]) == list(needle) for i in range(len(hay) - n + 1))


def value_matches(fact_value: str | None, expected: str | None) -> bool:
    """Whole-word phrase containment either way, after case folding and dropping punctuation and articles."""
    if not fact_value or not expected:
        return False
    a, b = _words(fact_value), _words(expected)
    return _contains(a, b) or _contains(b, a)


def label(hit: RankedHit, gold: Gold) -> str | None:
    """The hit's label for a knowledge-update question: "CURRENT", "SUPERSEDED" or None (see the module)."""
    if hit.fact_value:
        cur, old = value_matches(hit.fact_value, gold.answer), value_matches(hit.fact_value, gold.superseded_value)
        if cur != old:
            return "CURRENT" if cur else "SUPERSEDED"
    if hit.session_id and hit.session_id == gold.current_session_id:
        return "CURRENT"
    if hit.session_id and hit.session_id in gold.evidence:
        return "SUPERSEDED"
    return None


def current_wins(hits: Sequence[RankedHit], gold: Gold) -> bool | None:
    """True when a CURRENT hit ranks before every SUPERSEDED one; None for questions it does not apply to."""
    if gold.category != "knowledge-update" or gold.current_session_id is None:
        return None
    for h in hits:
        lab = label(h, gold)
        if lab is not None:
            return lab == "CURRENT"
    return False


def _after(t: datetime | None, limit: datetime) -> bool:
    return t is not None and (t if t.tzinfo else t.replace(tzinfo=UTC)) > limit


def future_leaks(hits: Iterable[RankedHit], question_date: datetime) -> int:
    return sum(_after(h.occurred_at, question_date) or _after(h.valid_from, question_date) for h in hits)


def abstained(res: Retrieval, below: float = ABSTAIN_BELOW) -> bool:
    return res.abstained or res.confidence < below


# --- aggregation -----------------------------------------------------------------------------------------------


@dataclass
class Scores:
    """Averages over one group of questions (a category, or all); a figure is NaN when nothing applies."""

    n: int = 0
    recall: dict[int, float] = field(default_factory=dict)
    any_hit: dict[int, float] = field(default_factory=dict)
    ndcg10: float = float("nan")
    current_wins: float = float("nan")
    current_n: int = 0
    leaks: int = 0  # leaking hits
    leaking_questions: int = 0
    abstention: float = float("nan")  # on abstention questions
    false_abstention: float = float("nan")  # on answerable questions


def _mean(xs: Sequence[float | None]) -> float:
    kept = [x for x in xs if x is not None]
    return statistics.fmean(kept) if kept else float("nan")


def score(golds: Sequence[Gold], results: Sequence[Retrieval], ks: Sequence[int] = KS,
          below: float = ABSTAIN_BELOW) -> Scores:  # fmt: skip
    if len(golds) != len(results):
        raise ValueError("one result per question")
    ranked = [ranked_sessions(r.hits) for r in results]
    wins = [current_wins(r.hits, g) for g, r in zip(golds, results, strict=True)]
    leaks = [future_leaks(r.hits, g.question_date) for g, r in zip(golds, results, strict=True)]
    absq = [abstained(r, below) for g, r in zip(golds, results, strict=True) if g.category == "abstention"]
    answerable = [abstained(r, below) for g, r in zip(golds, results, strict=True) if g.category != "abstention"]
    return Scores(
        n=len(golds),
        recall={k: _mean([recall_at(s, g.evidence, k) for g, s in zip(golds, ranked, strict=True)]) for k in ks},
        any_hit={k: _mean([any_hit_at(s, g.evidence, k) for g, s in zip(golds, ranked, strict=True)]) for k in ks},
        ndcg10=_mean([ndcg_at(s, g.evidence, 10) for g, s in zip(golds, ranked, strict=True)]),
        current_wins=_mean([None if w is None else float(w) for w in wins]),
        current_n=sum(w is not None for w in wins),
        leaks=sum(leaks),
        leaking_questions=sum(x > 0 for x in leaks),
        abstention=_mean([float(x) for x in absq]),
        false_abstention=_mean([float(x) for x in answerable]),
    )


def by_category(golds: Sequence[Gold], results: Sequence[Retrieval], categories: Sequence[str],
                ks: Sequence[int] = KS) -> Mapping[str, Scores]:  # fmt: skip
    """Scores per category (in ``categories`` order, those with questions) and ``"overall"`` last."""
    out: dict[str, Scores] = {}
    for c in categories:
        idx = [i for i, g in enumerate(golds) if g.category == c]
        if idx:
            out[c] = score([golds[i] for i in idx], [results[i] for i in idx], ks)
    out["overall"] = score(golds, results, ks)
    return out
