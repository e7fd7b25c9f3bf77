"""One CLAM step, a pure function: what one operation does to one claw's mind.

``learn(op, mind, at, cfg, new_id, perceive, critic)`` mutates ``mind`` (the short-term buffer, the
long-term memory's terms for linking, the knowledge graph) and returns what happened, in order; the
clam processor puts that on the log and the read model folds it. ``at`` is the operation's broker log
time, so the garbage collector's clock is the log's and a replay of the read model needs no clock.

A PERCEIVE runs, in this order (seed 002 §3):
1. the critic, on each short-term node the exchange addresses (it seeks contradictions: a node that
   withstands gains a point, one that fails loses one; G-08), unless disabled (G-09);
2. the perceiver's deductions: a ``fact`` goes straight to the graph and to semantic long-term memory
   (dual-write, X-36), anything else becomes a short-term node (a duplicate description refreshes the
   node it repeats instead);
3. the garbage collector at ``at`` (promotion with Zettelkasten links, or decay; G-10, X-29).
A TICK runs step 3 alone; a SEED fills an empty graph only (G-05).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from contracts.models import ClamPayload
from governance.clam.config import ClamConfig
from governance.clam.critic import Critique
from governance.clam.lifecycle import addresses, apply_verdict, gc, links, touch
from governance.clam.nodes import Deduction, MemoryNode, topic_terms
from governance.clam.triples import CATEGORY, Triple, normalise, triple_id

Perceiver = Callable[[str, str], list[Deduction]]
CriticFn = Callable[[MemoryNode, str, Iterable[Triple]], Critique]


@dataclass
class Mind:
    """One claw's CLAM state, as the processor keeps it."""

    stm: dict[str, MemoryNode] = field(default_factory=dict)
    ltm_terms: dict[str, tuple[str, ...]] = field(default_factory=dict)
    graph: dict[str, Triple] = field(default_factory=dict)


@dataclass(frozen=True)
class Happened:
    kind: str  # NODE_CREATED | FACT_STORED | CRITIQUED | PROMOTED | DECAYED | SEEDED | NOTHING
    concept_id: str = ""
    data: dict[str, Any] = field(default_factory=dict)


def node_wire(n: MemoryNode) -> dict[str, Any]:
    return n.to_wire()


def triple_wire(t: Triple) -> dict[str, str]:
    return {"subject": t.subject, "predicate": t.predicate, "object": t.object}


def learn(op: ClamPayload, mind: Mind, at: int, cfg: ClamConfig, new_id: Callable[[int], str], perceive: Perceiver,
          critic: CriticFn) -> list[Happened]:  # fmt: skip
    if op.op == "SEED":
        return _seed(op, mind)
    out: list[Happened] = []
    if op.op == "PERCEIVE":
        out += _perceive(op, mind, at, cfg, new_id, perceive, critic)
    out += _collect(mind, at, cfg)
    return out or [Happened("NOTHING", data={"reason": "nothing to learn, nothing to promote or forget"})]


def _seed(op: ClamPayload, mind: Mind) -> list[Happened]:
    if mind.graph:
        return [Happened("NOTHING", data={"reason": "seed truths apply only to an empty knowledge graph"})]
    seeded = [normalise(Triple(t.subject, t.predicate, t.object)) for t in op.truths]
    for t in seeded:
        mind.graph[triple_id(t)] = t
    return [Happened("SEEDED", data={"triples": [{**triple_wire(t), "triple_id": triple_id(t),
                                                  "category": CATEGORY.get(t.predicate, "preferences")}
                                                 for t in seeded]})]  # fmt: skip


def _perceive(op: ClamPayload, mind: Mind, at: int, cfg: ClamConfig, new_id: Callable[[int], str],
              perceive: Perceiver, critic: CriticFn) -> list[Happened]:  # fmt: skip
    out: list[Happened] = []
    exchange = f"{op.prompt}\n{op.response}"
    terms = topic_terms(exchange)
    if cfg.critic_enabled:
        for cid in sorted(mind.stm):
            node = mind.stm[cid]
            if not addresses(node, terms):
                continue
            c = critic(node, op.prompt, mind.graph.values())  # the user's side: its "I" is the user
            mind.stm[cid] = judged = apply_verdict(node, c.withstands, at)
            out.append(Happened("CRITIQUED", cid, {"withstands": c.withstands, "debate": c.debate, "by": c.by,
                                                   "confidence_score": judged.confidence_score,
                                                   "last_access_timestamp": at}))  # fmt: skip
    for i, d in enumerate(perceive(op.prompt, op.response)[: cfg.max_deductions]):
        if d.kind == "fact" and d.triple is not None:
            t = normalise(d.triple)
            tid = triple_id(t)
            if tid in mind.graph:
                continue
            mind.graph[tid] = t
            node = MemoryNode(concept_id=new_id(i), description=d.description, confidence_score=1,
                              creation_timestamp=at, last_access_timestamp=at,
                              origin_context=f"fact from exchange {op.op_id}", kind="semantic",
                              topic_terms=topic_terms(d.description))  # fmt: skip
            linked = links(node, mind.ltm_terms.items(), cfg)
            mind.ltm_terms[node.concept_id] = node.topic_terms
            out.append(Happened("FACT_STORED", node.concept_id, {
                "triple": triple_wire(t), "triple_id": tid, "category": CATEGORY.get(t.predicate, "preferences"),
                "node": node_wire(node), "links": [list(x) for x in linked], "by": d.by}))  # fmt: skip
            continue
        same = next((n for n in mind.stm.values() if n.description == d.description), None)
        if same is not None:  # said again: the node is fresh again, not doubled
            mind.stm[same.concept_id] = touch(same, at)
            continue
        node = MemoryNode(concept_id=new_id(i), description=d.description, confidence_score=1, creation_timestamp=at,
                          last_access_timestamp=at, origin_context=f"deduced from exchange {op.op_id}",
                          kind="episodic" if d.kind == "episodic" else "semantic",
                          topic_terms=topic_terms(d.description))  # fmt: skip
        mind.stm[node.concept_id] = node
        out.append(Happened("NODE_CREATED", node.concept_id, {"node": node_wire(node), "by": d.by}))
    return out


def _collect(mind: Mind, at: int, cfg: ClamConfig) -> list[Happened]:
    out: list[Happened] = []
    result = gc(mind.stm.values(), at, cfg)
    for node in sorted(result.promote, key=lambda n: n.concept_id):
        linked = links(node, mind.ltm_terms.items(), cfg)
        del mind.stm[node.concept_id]
        mind.ltm_terms[node.concept_id] = node.topic_terms
        out.append(Happened("PROMOTED", node.concept_id, {"node": node_wire(node), "collection": node.kind,
                                                          "links": [list(x) for x in linked]}))  # fmt: skip
    for node in sorted(result.decay, key=lambda n: n.concept_id):
        del mind.stm[node.concept_id]
        out.append(Happened("DECAYED", node.concept_id, {"node": node_wire(node)}))
    return out
