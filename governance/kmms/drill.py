"""The drill from a matched fact down to its evidence (seed 000 §3: L2 -> L4), as a ranking rule.

An L2 fact is an answer in a few words, with the episode it was read from as its evidence and a chain of
versions. The first stage ranks episodes by their rounds alone: the round a fact was read from may rank below
rounds that only sound like the question, and the episode of the version it replaced ("I live in Lisbon",
before "I moved to Porto") may not rank at all, as it names the old value, not what the question asks. So
when the question matches a fact well, the fact's episodes are its evidence: they join the first stage's
episode ranking as one more reciprocal-rank list (``weight / (k + rank)`` added to an episode's score, as
``governance.kmms.fusion.rrf`` would), and each takes the place its new score earns.

Which episodes, in which order: for each drilled fact (best first), the episodes it was read from, then
those of the version linked to it that tells the change: on a question about the present the version it
superseded (where the value came from), on a question about a past moment the version that superseded it
(where the value ended). Episodes are the caller's to bound in time (nothing after ``as_of``).

On a question about the present, a superseded version's episodes never come before the current one's.

Decisions: only L2 facts with a key drill (an L3 summary is about a topic, not an answer); a fact drills
when its similarity to the question is at least ``min_similarity``; at most ``limit`` facts drill. The merge
is stable: an episode that gains nothing keeps its place relative to the others, and one that moves is put
before the first episode whose score is lower than its new score, so a ranking the caller ordered by more
than its scores (a time window's episodes first) keeps that order for everything else.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class FactCandidate:
    node_id: str
    layer: int
    fact_key: str | None
    similarity: float


def facts_to_drill(nodes: Sequence[FactCandidate], min_similarity: float, limit: int) -> list[str]:
    """The node ids of the facts that drill, most similar first (ties: the nodes' order)."""
    ok = [n for n in nodes if n.layer == 2 and n.fact_key and n.similarity >= min_similarity]
    ok.sort(key=lambda n: -n.similarity)
    return [n.node_id for n in ok[:limit]]


def evidence_order(facts: Sequence[tuple[Sequence[str], Sequence[str]]]) -> list[str]:
    """The drilled episodes in rank order: per fact, its own episodes, then its linked version's; each once."""
    out: list[str] = []
    for own, linked in facts:
        for e in (*own, *linked):
            if e not in out:
                out.append(e)
    return out


def merge_drilled(ranked: Sequence[tuple[str, float]], drilled: Sequence[str], k: int, weight: float,
                  after: Mapping[str, Collection[str]] | None = None) -> list[tuple[str, float]]:  # fmt: skip
    """``ranked`` (episode id, score) with each drilled episode's score raised by ``weight / (k + rank)`` and
    the episode moved before the first one scoring less; a drilled episode not in ``ranked`` starts at 0.
    ``after`` maps a drilled episode to those it may not come before (a superseded version's episode after the
    current one's): it is then put right after the last of them, with that one's score."""
    if k < 0 or weight < 0:
        raise ValueError("k and weight must be >= 0")
    gain = {e: weight / (k + r) for r, e in enumerate(dict.fromkeys(drilled), start=1)}
    out = [(e, s) for e, s in ranked if e not in gain]
    base = dict(ranked)
    # The biggest gain first, so two drilled episodes keep the drill's order when their scores tie.
    for e, g in sorted(gain.items(), key=lambda x: -x[1]):
        score = base.get(e, 0.0) + g
        at = next((i for i, (_, s) in enumerate(out) if s < score), len(out))
        out.insert(at, (e, score))
    for e, firsts in (after or {}).items():
        ids = [x for x, _ in out]
        if e not in ids or not (before := [ids.index(f) for f in firsts if f in ids and f != e]):
            continue
        if ids.index(e) < (last := max(before)):
            entry = out.pop(ids.index(e))
            out.insert(last, (entry[0], out[last - 1][1]))
    return out
