"""The STM lifecycle (G-08, G-10, X-29): critic verdicts, access, the GC's promotion and decay, Zettelkasten links.

Comparisons are the seed's, exactly: promote when ``confidence_score >= promotion_threshold``; decay when
``(now - last_access_timestamp) > decay_time_ms`` and ``confidence_score < min_score``. A node is promoted,
decays, or stays; promotion is tested first, and ClamConfig refuses ``min_score > promotion_threshold``, so
no score qualifies for both. Access times never go back: a verdict or touch stamped earlier than the node's
last access (a late record on another partition) leaves the access time as it was.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from governance.clam.config import ClamConfig
from governance.clam.nodes import MemoryNode


def touch(node: MemoryNode, at: int) -> MemoryNode:
    """The node was read or restated at ``at``: its idle time restarts."""
    return dataclasses.replace(node, last_access_timestamp=max(node.last_access_timestamp, at))


def apply_verdict(node: MemoryNode, withstands: bool, at: int) -> MemoryNode:
    """G-08: withstands -> score + 1, fails -> score - 1; either way the critic accessed it."""
    return dataclasses.replace(touch(node, at), confidence_score=node.confidence_score + (1 if withstands else -1))


@dataclass(frozen=True)
class GcResult:
    promote: tuple[MemoryNode, ...]
    decay: tuple[MemoryNode, ...]


def should_promote(node: MemoryNode, cfg: ClamConfig) -> bool:
    return node.confidence_score >= cfg.promotion_threshold


def should_decay(node: MemoryNode, now: int, cfg: ClamConfig) -> bool:
    return (now - node.last_access_timestamp) > cfg.decay_time_ms and node.confidence_score < cfg.min_score


def gc(nodes: Iterable[MemoryNode], now: int, cfg: ClamConfig) -> GcResult:
    """One GC pass over the STM (G-10). Both lists ordered by concept_id, whatever the store's iteration
    order, so a replay emits the same events in the same order. Duplicate ids are refused (ValueError)."""
    promote: list[MemoryNode] = []
    decay: list[MemoryNode] = []
    seen: set[str] = set()
    for node in sorted(nodes, key=lambda n: n.concept_id):
        if node.concept_id in seen:
            raise ValueError(f"duplicate concept_id {node.concept_id}")
        seen.add(node.concept_id)
        if should_promote(node, cfg):
            promote.append(node)
        elif should_decay(node, now, cfg):
            decay.append(node)
    return GcResult(tuple(promote), tuple(decay))


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """|A ∩ B| / |A ∪ B|; two empty sets share nothing (0.0), they are not identical topics."""
    sa, sb = set(a), set(b)
    union = sa | sb
    return len(sa & sb) / len(union) if union else 0.0


Link = tuple[str, float]  # (LTM node id, similarity)


def links(node: MemoryNode, ltm: Iterable[tuple[str, tuple[str, ...]]], cfg: ClamConfig) -> tuple[Link, ...]:
    """Zettelkasten linkage for a node being promoted (G-10): the ``link_top_k`` LTM nodes ``(id, terms)`` most
    similar to it with similarity >= ``link_min_similarity``, best first, ties by id.

    Similarity is Jaccard on topic terms rather than embedding cosine: it is deterministic and needs no model,
    so a replay links the same nodes; a processor with vectors can rank with ``rank_links`` on its own scores.
    """
    return rank_links(((other_id, jaccard(node.topic_terms, terms)) for other_id, terms in ltm), node.concept_id, cfg)


def rank_links(scored: Iterable[Link], self_id: str, cfg: ClamConfig) -> tuple[Link, ...]:
    """Top-k of ``(id, similarity)`` pairs at or above the threshold, the node itself left out; a similarity of 0
    or less is never a link, whatever the threshold (nothing in common)."""
    best: dict[str, float] = {}
    for other_id, sim in scored:
        if other_id != self_id and sim > 0 and sim >= cfg.link_min_similarity and sim > best.get(other_id, -1.0):
            best[other_id] = sim
    return tuple(sorted(best.items(), key=lambda p: (-p[1], p[0]))[: cfg.link_top_k])


def addresses(node: MemoryNode, exchange_terms: Iterable[str]) -> bool:
    """G-08's "when the LLM addresses a topic": the exchange shares at least one topic term with the node."""
    return not set(node.topic_terms).isdisjoint(exchange_terms)


def addressed(nodes: Iterable[MemoryNode], exchange_terms: Iterable[str]) -> tuple[MemoryNode, ...]:
    """The STM nodes an exchange addresses (the critic's scan), ordered by concept_id."""
    terms = frozenset(exchange_terms)
    return tuple(sorted((n for n in nodes if addresses(n, terms)), key=lambda n: n.concept_id))
