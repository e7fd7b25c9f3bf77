"""The value types KMMS's rules, its consolidators and its processors exchange.

The shapes follow seed 000 §2.3 (the knowledge node) and §4.3 (the extracted-fact JSON). The enums the
seed leaves open use the resolutions in docs/kmms.md: FactType = preference | attribute | relationship |
event | skill | other; a contradiction is direct | temporal | contextual and is resolved by supersede |
coexist | flag_for_review.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Layer = Literal[0, 1, 2, 3, 4]
FactType = Literal["preference", "attribute", "relationship", "event", "skill", "other"]
ContradictionClass = Literal["direct", "temporal", "contextual"]
Resolution = Literal["supersede", "coexist", "flag_for_review"]
EntityKind = Literal["USER", "PERSON", "ORG", "PRODUCT", "TECH", "PLACE", "OTHER"]
USER_ENTITY = "user"  # the memory's owner: first-person statements ("I moved to Porto") are about it


@dataclass(frozen=True)
class EpisodeText:
    """One L4 episode as the consolidators see it."""

    episode_id: str
    session_id: str
    occurred_at_ms: int  # event time (when it happened), ms since the epoch, UTC
    text: str  # verbatim, turns rendered "role: content" one per line


@dataclass(frozen=True)
class Entity:
    name: str  # canonical form, e.g. "John", "DuckDB", "user"
    kind: EntityKind
    score: float  # detector confidence in [0, 1]


@dataclass(frozen=True)
class Enrichment:
    """What enrichment found in one episode (seed §2.4): entities, topics, and the primary pair the
    L4 node is tagged with."""

    entities: tuple[Entity, ...]
    topics: tuple[str, ...]
    primary_entity: str
    primary_topic: str


@dataclass(frozen=True)
class Summary:
    """An L3 summary of episodes about one (entity, topic) in one time window."""

    text: str
    source_episode_ids: tuple[str, ...]
    contradictions: tuple[str, ...] = field(default=())  # what a merge found at odds with the previous version


class ExtractedFact(BaseModel):
    """One element of ``extracted_facts`` (seed 000 §4.3), validated: a malformed LLM answer is refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str = Field(min_length=1, max_length=120, pattern=r"^[a-z][a-z0-9_]*$")
    value: str = Field(min_length=1, max_length=500)
    fact_type: FactType
    confidence: float = Field(ge=0.0, le=1.0)
    updates_existing: str | None = None  # the key (or node id) of the fact it updates
    is_contradiction: bool = False
    source_quote: str = Field(min_length=1, max_length=1000)


class ExtractedFacts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    extracted_facts: list[ExtractedFact] = Field(max_length=50)
