"""CLAM memory nodes and deductions (G-03, G-04, X-36, X-39).

Times are epoch milliseconds of broker log time (so replay gives the same ages); ids are deterministic UUID
strings the caller derives (``node_id``), so a node rebuilt from the log (X-37) keeps its id. The score is
``confidence_score``, an int starting at 1, never mixed with the other models' confidences (X-39).
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from governance.clam.triples import Triple

NodeKind = Literal["semantic", "episodic"]
DeductionKind = Literal["fact", "semantic", "episodic"]
_NS_NODE = uuid.uuid5(uuid.NAMESPACE_URL, "hivemem:clam:node")

# words that say nothing about a topic; "user" is here because every fact about the user carries it
_STOP = """
about above after again against all also and any anymore are aren't because been before being below between both
but can can't cannot could couldn't did didn't does doesn't doing don't down during each few for from further had
hadn't has hasn't have haven't having her here hers herself him himself his how i'd i'll i'm i've into isn't it's
its itself just let's more most much must mustn't myself nor not now off once only other ought our ours ourselves
out over own same shan't she she'd she'll she's should shouldn't some such than that that's the their theirs them
themselves then there there's these they they'd they'll they're they've this those through too under until very
was wasn't we'd we'll we're we've were weren't what what's when when's where where's which while who who's whom
why why's will with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves user yes
okay please thanks thank really
"""
STOP_WORDS: frozenset[str] = frozenset(_STOP.split())
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


def topic_terms(text: str) -> tuple[str, ...]:
    """Lowercase words of >= 3 letters or digits (numbers such as ``8080`` or an IP's parts name a topic too),
    minus STOP_WORDS, a final plural/3rd-person ``s`` folded (``uses`` = ``use``, so a restatement in another
    person still matches), sorted unique."""
    out: set[str] = set()
    for raw in _WORD.findall(text.replace("\u2019", "'").lower()):
        if raw in STOP_WORDS or len(raw) < 3:
            continue
        word = raw[:-1] if len(raw) > 3 and raw.endswith("s") and not raw.endswith(("ss", "us", "is")) else raw
        out.add(word)
    return tuple(sorted(out))


def node_id(kind: NodeKind, description: str) -> str:
    """A deterministic id: the same deduction told twice is the same node (a touch, not a duplicate)."""
    return str(uuid.uuid5(_NS_NODE, f"{kind}\x1f{' '.join(description.split()).casefold()}"))


@dataclass(frozen=True, kw_only=True)
class MemoryNode:
    """A short-term node (G-03). ``triple`` is the node's claim as a triple when the perceiver gave one: the
    critic checks it against the graph's functional predicates."""

    concept_id: str
    description: str
    confidence_score: int = 1
    creation_timestamp: int
    last_access_timestamp: int
    origin_context: str
    kind: NodeKind
    topic_terms: tuple[str, ...]
    triple: Triple | None = None

    def __post_init__(self) -> None:
        try:
            uuid.UUID(self.concept_id)
        except (ValueError, AttributeError, TypeError):
            raise ValueError(f"concept_id must be a UUID string, got {self.concept_id!r}") from None
        if not isinstance(self.description, str) or not self.description.strip():
            raise ValueError("description must be non-empty text")
        for name in ("confidence_score", "creation_timestamp", "last_access_timestamp"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} must be an int, got {value!r}")
        if self.last_access_timestamp < self.creation_timestamp:
            raise ValueError("last_access_timestamp must be >= creation_timestamp")
        if self.kind not in ("semantic", "episodic"):
            raise ValueError(f"kind must be semantic or episodic, got {self.kind!r}")
        if not isinstance(self.origin_context, str):
            raise ValueError("origin_context must be text")
        if not isinstance(self.topic_terms, tuple) or not all(isinstance(t, str) for t in self.topic_terms):
            raise ValueError("topic_terms must be a tuple of strings")
        if self.triple is not None and not isinstance(self.triple, Triple):
            raise ValueError(f"triple must be a Triple or None, got {type(self.triple).__name__}")

    def to_wire(self) -> dict[str, Any]:
        """JSON-ready fields (lists for tuples, the triple as a mapping); ``from_wire`` reads it back."""
        d = dataclasses.asdict(self)
        d["topic_terms"] = list(self.topic_terms)
        return d

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> MemoryNode:
        """The inverse of ``to_wire`` (a node rebuilt from the log, X-37); validated like any node."""
        t = d.get("triple")
        triple = Triple(t["subject"], t["predicate"], t["object"]) if isinstance(t, Mapping) else t
        return cls(**{**d, "topic_terms": tuple(d.get("topic_terms", ())), "triple": triple})


@dataclass(frozen=True)
class Deduction:
    """One perceiver output (G-07). X-36: ``fact`` (with its triple) goes to the graph and semantic LTM
    directly (dual-write); ``semantic`` and ``episodic`` go to the STM and the critic/GC path."""

    kind: DeductionKind
    description: str
    triple: Triple | None = None
    by: str = "local"  # the back-end that deduced it ("local", "llm:<model>"), written into the log's event

    def __post_init__(self) -> None:
        if self.kind not in ("fact", "semantic", "episodic"):
            raise ValueError(f"kind must be fact, semantic or episodic, got {self.kind!r}")
        if not isinstance(self.description, str) or not self.description.strip():
            raise ValueError("description must be non-empty text")
        if self.kind == "fact" and self.triple is None:
            raise ValueError("a fact deduction needs its triple")


def new_node(d: Deduction, *, at: int, origin_context: str) -> MemoryNode:
    """The STM node for a non-fact deduction, score 1, created and accessed ``at``."""
    if d.kind == "fact":
        raise ValueError("facts go to the graph and semantic LTM directly (X-36), not to the STM")
    return MemoryNode(concept_id=node_id(d.kind, d.description), description=d.description,
                      creation_timestamp=at, last_access_timestamp=at, origin_context=origin_context,
                      kind=d.kind, topic_terms=topic_terms(d.description), triple=d.triple)  # fmt: skip
