"""The critic's deterministic local fallback (G-08): a devil's advocate that hunts for contradictions.

It attacks a short-term node from two sides and writes the debate down, a line per attack:

* **The exchange** (the user's side of it: first-person sentences are read as the user's). Questions are
  skipped. A sentence contradicts the node when it shares enough of the node's topic terms (2, or 1 for a
  one-term node) with the opposite polarity — "I don't use ESP32 anymore" against "User uses ESP32", or the
  other way round — or when it states a fact in the same slot as the node's claim with another object, for a
  functional predicate (has_name, has_age, lives_in, comes_from, works_at): "I live in Rome" against
  "User lives in Milan". A sentence restates the node when it covers at least half its terms with the same
  polarity (and at least 2 of them, or its only one), or states the node's claim again.
* **The graph** (the source of truth): a triple in the same functional slot with another object, or, for a
  negated node, a triple the node denies (same overlap rule on the triple's text).

Any contradiction fails the node (score - 1). Otherwise it withstands (score + 1), restated or merely
unchallenged: the critic only runs on nodes the exchange addresses, and surviving the attack is the
confirmation the seed counts. ``reason`` says which case it was; an LLM critic may leave it None.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from governance.clam.nodes import MemoryNode, topic_terms
from governance.clam.perceiver import NEGATION, clauses, fact_description, fact_of, is_question, sentences
from governance.clam.triples import FUNCTIONAL, Triple, normalise, same_slot, triple_id

Reason = Literal["contradicted_by_exchange", "contradicted_by_graph", "restated", "unchallenged"]


@dataclass(frozen=True)
class Critique:
    withstands: bool
    debate: str  # the internal debate, a few lines (for the dashboard's stream of consciousness)
    reason: Reason | None = None
    by: str = "local"  # the back-end that judged ("local", "llm:<model>"), written into the log's event


def critique_local(node: MemoryNode, exchange: str, graph: Iterable[Triple]) -> Critique:
    """The module docstring's rules; deterministic (the graph is read in sorted order)."""
    claim = normalise(node.triple) if node.triple is not None else fact_of(node.description)
    terms = frozenset(node.topic_terms or topic_terms(node.description))
    negated = bool(NEGATION.search(node.description))
    need = min(2, len(terms))
    cover = max(need, (len(terms) + 1) // 2, 1)  # all of a short node, half of a long one

    said: str | None = None
    against: str | None = None
    for sentence in sentences(exchange):
        if is_question(sentence):
            continue
        shared = terms & set(topic_terms(sentence))
        stated = [f for f in map(fact_of, clauses(sentence)) if f is not None]
        if claim is not None and any(_conflicts(claim, f) for f in stated):
            against = against or f'"{sentence}" puts another value in the slot {claim.predicate}'
        elif need and len(shared) >= need and bool(NEGATION.search(sentence)) != negated:
            against = against or f'"{sentence}" {"affirms what it denies" if negated else "denies it"}'
        elif (claim is not None and triple_id(claim) in set(map(triple_id, stated))) or len(shared) >= cover:
            said = said or sentence

    conflict: str | None = None
    for t in sorted(map(normalise, graph), key=lambda t: (t.subject, t.predicate, t.object)):
        if claim is not None and _conflicts(claim, t):
            conflict = f"{fact_description(t)} holds, and {t.predicate} has one value"
            break
        if negated and need and len(terms & set(topic_terms(fact_description(t)))) >= need:
            conflict = f"{fact_description(t)} holds, and the node denies it"
            break

    lines = [f"Claim: {node.description}"]
    if against:
        lines.append(f"Exchange: contradicts it — {against}.")
    elif said:
        lines.append(f'Exchange: restates it — "{said}"; no denial found.')
    else:
        lines.append("Exchange: neither restates nor denies it.")
    lines.append(f"Graph: contradicts it — {conflict}." if conflict else "Graph: no conflicting triple.")
    reason: Reason
    if against:
        reason = "contradicted_by_exchange"
    elif conflict:
        reason = "contradicted_by_graph"
    else:
        reason = "restated" if said else "unchallenged"
    withstands = reason in ("restated", "unchallenged")
    verdict = "withstands" if withstands else "fails"
    lines.append(f"Verdict: {verdict} ({reason.replace('_', ' ')}).")
    return Critique(withstands, "\n".join(lines), reason)


def _conflicts(claim: Triple, other: Triple) -> bool:
    n = normalise(other)
    return claim.predicate in FUNCTIONAL and same_slot(claim, n) and claim.object.casefold() != n.object.casefold()
