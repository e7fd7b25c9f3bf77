"""Answer confidence: a base by layer (seed Table 3) plus independent modifiers, and the hedging prefix.

    final = clamp(base(layer) + Σ modifiers, 0, 1), rounded to 4 decimals

Decisions (beyond the seed):

* Every threshold is strict: a signal exactly at a threshold earns no modifier.
* The modifier list is normative. The seed's worked example (L3, similarity 0.92, verified 5 days ago)
  prints 0.90 and "Based on..."; by the rules it is 0.85 + 0.05 + 0.05 = 0.95 with no hedging.
* ``hedging_prefix`` comes from the final value only; ``layer_meaning`` (what the layer's base stands
  for) is returned beside it, so a caller can show either without the two contradicting each other.
* A node never verified (``last_verified_ms`` is None) gets neither the fresh nor the stale modifier:
  we do not know, so we neither reward nor punish. A verification "in the future" (clock skew) counts
  as fresh.
* Evidence count is the number of distinct source nodes; the caller counts, we compare.
* The superseded penalty applies only when the query is about the current state; for an evolution or
  point-in-time query a superseded version is the right answer.
* ``newer_evidence`` (HiveMem's, not the seed's) is the superseded penalty's twin for a fact that is still
  current in the log but that a later episode on its topic may have changed (``governance.kmms.recency``):
  same weight, same condition, never both.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from governance.kmms.strength import WEAK_BELOW

DAY_MS = 86_400_000

BASE: dict[int, float] = {0: 0.30, 1: 0.50, 2: 0.75, 3: 0.85, 4: 0.95}
LAYER_MEANING: dict[int, str] = {
    0: "I have something on this topic",
    1: "High-level understanding",
    2: "Established facts",
    3: "Based on multiple examples",
    4: "You specifically said...",
}

EVIDENCE_ABOVE = 5  # sources
HIGH_SIMILARITY_ABOVE = 0.9
FRESH_BELOW_MS = 7 * DAY_MS
STALE_ABOVE_MS = 30 * DAY_MS
WEAK_MATCH_BELOW = 0.6
WEAK_NODE_BELOW = WEAK_BELOW  # 0.3, shared with strength.is_weak

# (name, delta) in the fixed order they are reported.
EVIDENCE = ("evidence", 0.05)
HIGH_SIMILARITY = ("high_similarity", 0.05)
RECENTLY_VERIFIED = ("recently_verified", 0.05)
STALE = ("stale", -0.10)
WEAK_MATCH = ("weak_match", -0.10)
WEAK_NODE = ("weak_node", -0.10)
SUPERSEDED = ("superseded", -0.30)
NEWER_EVIDENCE = ("newer_evidence", -0.30)

HEDGE_NONE_FROM = 0.90
HEDGE_DISCUSSIONS = "Based on our discussions..."
HEDGE_UNDERSTAND = "From what I understand..."
HEDGE_LIMITED = "I have limited information, but..."


@dataclass(frozen=True)
class NodeSignals:
    """What the retriever knows about the node an answer comes from."""

    layer: int  # 0..4
    similarity: float  # query-node cosine in [0, 1]
    evidence_count: int  # distinct source nodes
    last_verified_ms: int | None  # None: never verified
    strength: float  # decayed strength at query time
    superseded: bool  # the node has been superseded by a newer version
    newer_evidence: bool = False  # a later episode on the node's topic may have changed it


@dataclass(frozen=True)
class Confidence:
    value: float
    base: float
    modifiers: tuple[tuple[str, float], ...]  # only those applied, in the fixed order above
    hedging_prefix: str | None
    layer_meaning: str


def evidence_count(source_ids: Iterable[str]) -> int:
    """The evidence count of a node: its distinct source nodes (a source cited twice counts once)."""
    return len(set(source_ids))


def hedging(value: float) -> str | None:
    """The prefix an answer of this confidence starts with; None when no hedge is needed (>= 0.90)."""
    if value >= HEDGE_NONE_FROM:
        return None
    if value >= 0.75:
        return HEDGE_DISCUSSIONS
    if value >= 0.50:
        return HEDGE_UNDERSTAND
    return HEDGE_LIMITED


def modifiers(signals: NodeSignals, now_ms: int, current_query: bool) -> tuple[tuple[str, float], ...]:
    applied: list[tuple[str, float]] = []
    if signals.evidence_count > EVIDENCE_ABOVE:
        applied.append(EVIDENCE)
    if signals.similarity > HIGH_SIMILARITY_ABOVE:
        applied.append(HIGH_SIMILARITY)
    if signals.last_verified_ms is not None:
        age_ms = now_ms - signals.last_verified_ms
        if age_ms < FRESH_BELOW_MS:
            applied.append(RECENTLY_VERIFIED)
        if age_ms > STALE_ABOVE_MS:
            applied.append(STALE)
    if signals.similarity < WEAK_MATCH_BELOW:
        applied.append(WEAK_MATCH)
    if signals.strength < WEAK_NODE_BELOW:
        applied.append(WEAK_NODE)
    if signals.superseded and current_query:
        applied.append(SUPERSEDED)
    elif signals.newer_evidence and current_query:
        applied.append(NEWER_EVIDENCE)
    return tuple(applied)


def score(signals: NodeSignals, now_ms: int, current_query: bool) -> Confidence:
    if signals.layer not in BASE:
        raise ValueError(f"layer must be 0..4, got {signals.layer}")
    base = BASE[signals.layer]
    applied = modifiers(signals, now_ms, current_query)
    raw = base + sum(delta for _, delta in applied)
    value = round(min(1.0, max(0.0, raw)), 4)
    return Confidence(
        value=value,
        base=base,
        modifiers=applied,
        hedging_prefix=hedging(value),
        layer_meaning=LAYER_MEANING[signals.layer],
    )
