"""The relation vocabulary and the grading rule: how good is a relation a writer declared?

A relation says ``source --rel--> target`` with a semantic class, a why and evidence refs. The kernel
checks what it can check (names, refs, scope, evidence) and grades; it never infers meaning.

The rule (``grade``), first match wins:

1. REJECTED ``UNKNOWN_RELATION`` — the relation name is not in ``VOCABULARY``.
2. REJECTED ``BAD_CLASS`` — the semantic class is not one of the six ``SEMANTIC_CLASSES``.
3. REJECTED ``UNKNOWN_SOURCE`` / ``UNKNOWN_TARGET`` — the source / target ref does not resolve.
4. REJECTED ``OTHER_ABOUT`` — the target lives in another about (relations never cross abouts).
5. REJECTED ``SELF_LOOP`` — source and target are the same entry.
6. REJECTED ``UNKNOWN_EVIDENCE`` — an evidence ref does not resolve.
7. SUSPECT ``CLASS_NOT_ALLOWED`` — the class is one of the six but not allowed for that relation.
8. SUSPECT ``MISSING_WHY`` — a rich relation with a blank why.
9. SUSPECT ``MISSING_EVIDENCE`` — a rich relation with no evidence ref.
10. SUSPECT ``TARGET_NOT_READ`` — a rich relation whose target was not in the context the writer read.
11. Otherwise the vocabulary's quality (RICH, ANEMIC or STRUCTURAL), reason ``OK``.

Decisions (beyond the brief):

* Anemic and structural relations need no why and no evidence, and need not have read their target:
  an honest "merely near" is a signal of weak memory, not a failure. A why or evidence given on them
  is still checked (an unresolved evidence ref rejects any relation).
* ``evidence_known`` is only consulted when there is at least one evidence ref (with none, there is
  nothing that fails to resolve).
* ``target_about`` is set by the caller only when the target's about differs from the source's; any
  non-None value is another about.
* A why of only whitespace is missing.
* ``count``'s evidence coverage is over the relations that enter the graph (not REJECTED) and are not
  structural by vocabulary; a structural relation graded SUSPECT still counts as structural there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, get_args

SemanticClass = Literal["STRUCTURAL", "CAUSAL", "MOTIVATIONAL", "PROCEDURAL", "EVIDENTIAL", "CONSTRAINT"]
Quality = Literal["RICH", "ANEMIC", "STRUCTURAL", "SUSPECT", "REJECTED"]
TypeQuality = Literal["RICH", "ANEMIC", "STRUCTURAL"]

SEMANTIC_CLASSES: frozenset[str] = frozenset(get_args(SemanticClass))


@dataclass(frozen=True)
class RelationType:
    quality: TypeQuality
    classes: frozenset[SemanticClass]  # the semantic classes a writer may declare it with
    meaning: str


def _rich(meaning: str, *classes: SemanticClass) -> RelationType:
    return RelationType("RICH", frozenset(classes), meaning)


# A revision (the source changes what the target said) is explained by a cause, by evidence or by a
# step of the procedure: one set for every revising relation.
_REVISION: tuple[SemanticClass, ...] = ("CAUSAL", "EVIDENTIAL", "PROCEDURAL")

VOCABULARY: Mapping[str, RelationType] = MappingProxyType({
    # rich: they explain
    "depends_on": _rich("the source needs the target to hold or be done first", "CAUSAL", "PROCEDURAL"),
    "chosen_because": _rich("the source was chosen for the reason the target states", "MOTIVATIONAL", "CAUSAL"),
    "triggers": _rich("the source sets the target off", "CAUSAL", "PROCEDURAL"),
    "authorizes": _rich("the source permits the target to happen", "CONSTRAINT", "PROCEDURAL"),
    "verified_by": _rich("the target checks that the source is true", "EVIDENTIAL"),
    "semantic_delta_from": _rich("the source says what changed in meaning since the target", *_REVISION),
    "updates_state": _rich("the source changes the state the target recorded", "CAUSAL", "PROCEDURAL"),
    "supports": _rich("the source is evidence for the target", "EVIDENTIAL"),
    "supersedes": _rich("the source is the newer version of the target", *_REVISION),
    "contradicts": _rich("the source and the target cannot both hold", "EVIDENTIAL", "CONSTRAINT"),
    "satisfies_constraint": _rich("the source meets the constraint the target states", "CONSTRAINT"),
    "violates_constraint": _rich("the source breaks the constraint the target states", "CONSTRAINT"),
    "derived_from": _rich("the source was worked out from the target", "CAUSAL", "EVIDENTIAL"),
    "corrects": _rich("the source fixes an error in the target", *_REVISION),
    "refines": _rich("the source makes the target more precise without replacing it", *_REVISION),
    "replaces": _rich("the source takes the target's place", *_REVISION),
    "caused_by": _rich("the target made the source happen", "CAUSAL"),
    "blocks": _rich("the source prevents the target from going on", "CAUSAL", "CONSTRAINT", "PROCEDURAL"),
    "resolves": _rich("the source ends the problem the target raised", "CAUSAL", "PROCEDURAL"),
    # anemic: honest, weak links
    "follows": RelationType("ANEMIC", frozenset({"STRUCTURAL", "PROCEDURAL"}), "the source came after the target"),
    "answers": RelationType("ANEMIC", frozenset({"STRUCTURAL", "PROCEDURAL"}), "the source replies to the target"),
    "uses_background": RelationType(
        "ANEMIC", frozenset({"STRUCTURAL", "PROCEDURAL"}), "the target was background when writing the source"
    ),
    "near": RelationType("ANEMIC", frozenset({"STRUCTURAL", "PROCEDURAL"}), "the source is merely near the target"),
    # structural: shape, no meaning
    "contains": RelationType("STRUCTURAL", frozenset({"STRUCTURAL"}), "the target is part of the source"),
    "member_of": RelationType("STRUCTURAL", frozenset({"STRUCTURAL"}), "the source is part of the target"),
    "scoped_to": RelationType("STRUCTURAL", frozenset({"STRUCTURAL"}), "the source holds within the target"),
})  # fmt: skip

SUPERSEDING = frozenset({"supersedes", "replaces", "corrects"})  # the source replaces the target
CONFLICTING = frozenset({"contradicts"})
CAUSAL_SPINE = frozenset({
    "depends_on", "chosen_because", "triggers", "caused_by", "authorizes", "derived_from", "updates_state", "resolves",
})  # fmt: skip  # rich relations that explain why


@dataclass(frozen=True)
class RelationFacts:
    """What the caller resolved about one declared relation; ``grade`` only compares."""

    rel: str
    semantic_class: str
    why: str
    evidence_refs: tuple[str, ...]
    source_known: bool
    target_known: bool
    target_about: str | None  # None: same about as the source
    evidence_known: bool  # every evidence ref resolves
    target_in_context: bool  # the writer listed the target among the refs it read, or it is in the same write
    self_loop: bool


@dataclass(frozen=True)
class Grade:
    quality: Quality
    reason: str  # stable UPPER_SNAKE code


OK = "OK"


def grade(f: RelationFacts) -> Grade:
    """The rule of the module docstring, in its order."""
    rtype = VOCABULARY.get(f.rel)
    if rtype is None:
        return Grade("REJECTED", "UNKNOWN_RELATION")
    if f.semantic_class not in SEMANTIC_CLASSES:
        return Grade("REJECTED", "BAD_CLASS")
    if not f.source_known:
        return Grade("REJECTED", "UNKNOWN_SOURCE")
    if not f.target_known:
        return Grade("REJECTED", "UNKNOWN_TARGET")
    if f.target_about is not None:
        return Grade("REJECTED", "OTHER_ABOUT")
    if f.self_loop:
        return Grade("REJECTED", "SELF_LOOP")
    if f.evidence_refs and not f.evidence_known:
        return Grade("REJECTED", "UNKNOWN_EVIDENCE")
    if f.semantic_class not in rtype.classes:
        return Grade("SUSPECT", "CLASS_NOT_ALLOWED")
    if rtype.quality == "RICH":
        if not f.why.strip():
            return Grade("SUSPECT", "MISSING_WHY")
        if not f.evidence_refs:
            return Grade("SUSPECT", "MISSING_EVIDENCE")
        if not f.target_in_context:
            return Grade("SUSPECT", "TARGET_NOT_READ")
    return Grade(rtype.quality, OK)


@dataclass(frozen=True)
class QualityCounts:
    rich: int
    anemic: int
    structural: int
    suspect: int
    rejected: int
    evidence_coverage: float  # share of accepted non-structural relations with >= 1 evidence ref; 1.0 if none
    context_observed: int  # refs the writer declared it read before writing


def count(grades: Sequence[Grade], facts: Sequence[RelationFacts], context_observed: int) -> QualityCounts:
    """Tally one write's grades; ``grades[i]`` is the grade of ``facts[i]``."""
    if len(grades) != len(facts):
        raise ValueError(f"{len(grades)} grades for {len(facts)} relations")
    if context_observed < 0:
        raise ValueError(f"context_observed must be >= 0, got {context_observed}")
    tally = dict.fromkeys(get_args(Quality), 0)
    covered = considered = 0
    for g, f in zip(grades, facts, strict=True):
        tally[g.quality] += 1
        rtype = VOCABULARY.get(f.rel)
        if g.quality == "REJECTED" or rtype is None or rtype.quality == "STRUCTURAL":
            continue
        considered += 1
        covered += bool(f.evidence_refs)
    return QualityCounts(
        rich=tally["RICH"],
        anemic=tally["ANEMIC"],
        structural=tally["STRUCTURAL"],
        suspect=tally["SUSPECT"],
        rejected=tally["REJECTED"],
        evidence_coverage=covered / considered if considered else 1.0,
        context_observed=context_observed,
    )
