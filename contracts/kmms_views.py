"""What the memory API answers (``/api/v1/memory/search``, ``/ask``, ``/facts``), declared once for both ends.

The server (``projections/kmms/queries.py``) fills these with epoch-millisecond times: ``MemoryHit[int]``,
``SearchResult[int]``. The SDK (``producers/memory_client.py``) reads the same JSON and shows datetimes:
``MemoryHit[datetime]``, ``SearchResult[datetime]``. ``Time`` is the type of every time field; nothing else
differs, so a field added here reaches the API, its OpenAPI schema and the SDK at once.

Fields are snake_case in Python and camelCase in JSON. An unknown field is ignored when read (pydantic's
default), so an older SDK keeps reading a newer server.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, PrivateAttr
from pydantic.alias_generators import to_camel

Time = TypeVar("Time")

# The keys of an OpenAI chat message that the memory API reads (``Message``, projections/http/kmms_messages.py: it
# keeps what was said, and accepts OpenAI's other fields of a message without keeping them). The SDK sends these of a
# message's keys and no others (a framework's own, "id", "timestamp"..., would be refused).
MESSAGE_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id", "function_call", "refusal", "audio")


class View(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    @classmethod
    def model_parametrized_name(cls, params: tuple[Any, ...]) -> str:
        # The API's schema names the ms form as the class ("MemoryHit"); the SDK's is "MemoryHit[datetime]".
        return cls.__name__ if params == (int,) else f"{cls.__name__}[{getattr(params[0], '__name__', params[0])}]"


class MemoryHit(View, Generic[Time]):
    layer: int
    node_id: str  # the node, or for L4 the episode id
    score: float  # fused first-stage score (reciprocal rank)
    similarity: float
    confidence: float
    hedging: str | None
    layer_meaning: str
    modifiers: list[tuple[str, float]]  # the confidence modifiers applied, e.g. ("newer_evidence", -0.3)
    text: str
    episode_id: str | None = None
    session_id: str | None = None
    thread_id: str | None = None
    occurred_at: Time | None = None  # event time (L4)
    valid_from: Time | None = None
    valid_until: Time | None = None
    status: str = "CURRENT"
    entity: str | None = None
    topic: str | None = None
    fact_key: str | None = None
    fact_value: str | None = None
    version: int | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    source_ids: list[str] = []
    # A derived node's provenance in sessions: those of the episodes it was read from (L1 -> L2 -> L3 -> L4).
    session_ids: list[str] = []
    # A fact a later episode among the hits may have changed (``newer_evidence``): that episode's id.
    outdated_by: str | None = None
    logged_at: Time | None = None
    # An L4 hit's round (its unit id, ``<episode id>#<n>``), for ``ask``'s answer (the units around it); not in the
    # JSON: the server's own, set where the hit is built.
    _round_id: str | None = PrivateAttr(default=None)


class LayerStep(View):
    layer: int
    sufficient: bool
    reason: str
    best_similarity: float | None


class SearchResult(View, Generic[Time]):
    query: str
    as_of: Time
    temporal_intent: str
    window_start: Time | None
    window_end: Time | None
    temporal_cues: list[str]
    entities: list[str]  # the query's words the L0 index knows
    answer_layer: int | None
    confidence: float
    hedging_prefix: str | None
    layer_meaning: str | None
    abstained: bool
    superseded_fallback: bool  # a CURRENT query answered from superseded content
    drill: list[LayerStep]
    provenance: list[str]  # node ids from the top layer visited down to the answer
    embedding_model: str | None = None  # the model whose vectors ranked the hits (None: text only)
    # Why a hybrid search was ranked by text alone: EMBEDDINGS_UNAVAILABLE while the embeddings server is down.
    degraded: str | None = None
    hits: list[MemoryHit[Time]]  # evidence: episodes (L4), each by its best unit, best first
    # What consolidation derived (L1-L3: abstractions, facts, summaries), best first, each with the sessions it
    # cites: it explains and may answer, but never takes an evidence hit's place (docs/kmms.md, "Evidence first").
    context: list[MemoryHit[Time]] = []
    # The search's own time once the question is embedded (ms): the question's embedding (about 3 ms on one core)
    # and the request's handling are not in it.
    latency_ms: float

    def answering_hit(self) -> MemoryHit[Time] | None:
        """The hit the search answers with, what ``ask`` says: the last node of ``provenance``, of ``answer_layer``,
        among ``context`` and ``hits`` (an L4 hit's node is its episode); None when the search abstained."""
        answer_id = self.provenance[-1] if self.provenance else None
        if self.abstained or answer_id is None:
            return None
        return next((h for h in [*self.context, *self.hits] if h.node_id == answer_id and h.layer == self.answer_layer),
                    None)  # fmt: skip
