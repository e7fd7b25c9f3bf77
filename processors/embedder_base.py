"""What the CAML and KMMS embedders share: a stateless processor around one embedding model, and calling the
model so that its server being down is an outage the batch waits out, never a refusal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from contracts.topics import TopicNames
from inference.embedding_base import TRANSIENT, EmbeddingError
from inference.embeddings import Embedder
from streams.offsets import Conn
from streams.processor import Failure, Outage
from streams.records import OutRecord

T = TypeVar("T")


def embed_or_outage(embedder: Embedder, texts: list[str]) -> list[list[float]]:
    """The texts' vectors; an embeddings server that is down (or busy) is an ``Outage``: the batch waits
    for it, its records are never refused (and left unembedded) over it."""
    return or_outage(embedder, lambda: embedder.embed(texts))


def or_outage(embedder: Embedder, call: Callable[[], T]) -> T:
    """``call()``, an embedding by ``embedder``; ``embed_or_outage``'s rule for its errors."""
    try:
        return call()
    except EmbeddingError as exc:
        if exc.code in TRANSIENT:
            raise Outage(f"{embedder.model_id}: {exc}") from exc
        raise


class StatelessEmbedder:
    """An embedder processor's frame; a subclass names its input topics and turns records into vectors."""

    # No state: a record's outputs depend on it alone, so its partitions may be split over instances
    # (streams.group, HIVEMEM_INSTANCE), and with them the model's work.
    parallel = True

    def __init__(self, names: TopicNames, embedder: Embedder, name: str) -> None:
        self.names = names
        self.embedder = embedder
        self.name = name  # carries the model id's digest: a changed model is a new consumer

    def open(self, conn: Conn) -> None:
        pass  # stateless: its only effect is its outputs (and the runtime's offsets)

    def refuse(self, failure: Failure) -> list[OutRecord]:
        # Recorded in hivemem.processing_failures; the record stays unembedded (KMMS text search still finds it).
        return []
