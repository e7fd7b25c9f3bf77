"""What every sentence-embedding back-end shares: the protocol, its health report, its error, a query cache."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

#: The one vector size HiveMem stores; every back-end must produce it.
EMBEDDING_DIM = 384

# EmbeddingError codes.
BAD_INPUT = "bad_input"
CONFIG = "config"
MODEL_UNAVAILABLE = "model_unavailable"
MODEL_MISMATCH = "model_mismatch"
UPSTREAM_UNAVAILABLE = "upstream_unavailable"
UPSTREAM_TIMEOUT = "upstream_timeout"
UPSTREAM_ERROR = "upstream_error"
BAD_RESPONSE = "bad_response"
DIMENSION_MISMATCH = "dimension_mismatch"
# Codes that say "not now" rather than "not this input": an embedder processor waits them out.
TRANSIENT = frozenset({UPSTREAM_UNAVAILABLE, UPSTREAM_TIMEOUT, MODEL_UNAVAILABLE})


class EmbeddingError(Exception):
    """An embedding could not be produced; ``code`` is one of the constants above, stable for callers."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True)
class EmbedderHealth:
    ok: bool
    model_id: str
    dim: int
    detail: str


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised ``dim``-vectors; ``model_id`` names the vector space and goes with each vector."""

    model_id: str
    dim: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...

    def health(self) -> EmbedderHealth: ...


@runtime_checkable
class TokenStatesEmbedder(Protocol):
    """An embedder that also gives the states of a text's content pieces (``governance.token_states``), from the same
    forward pass: the local MiniLM does; an OpenAI-compatible server gives vectors only."""

    def embed_with_tokens(self, texts: Sequence[str]) -> list[tuple[list[float], bytes]]: ...

    def query_with_tokens(self, text: str) -> tuple[list[float], Any]: ...  # the vector, the states (numpy rows)


def check_texts(texts: Sequence[str]) -> list[str]:
    # A bare str is a Sequence[str] too: embedding it would embed each character.
    if isinstance(texts, str):
        raise EmbeddingError(BAD_INPUT, "embed() takes a sequence of texts, not one str (use embed_query)")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise EmbeddingError(BAD_INPUT, f"text {i} is {type(t).__name__}, not str")
    return out


def normalise(vec: Sequence[float], dim: int, what: str) -> list[float]:
    """``vec`` as unit-length floats, after checking its size and values."""
    if len(vec) != dim:
        raise EmbeddingError(DIMENSION_MISMATCH, f"{what} has {len(vec)} dimensions; HiveMem stores {dim}")
    norm = math.sqrt(math.fsum(x * x for x in vec))
    if not math.isfinite(norm) or norm == 0.0:
        raise EmbeddingError(BAD_RESPONSE, f"{what} is zero or not finite; it cannot be normalised")
    return [x / norm for x in vec]


def probe(embedder: Embedder) -> EmbedderHealth:
    """Embed one short text and check its size and length; never raises."""
    try:
        (vec,) = embedder.embed(["hivemem health probe"])
        norm = math.sqrt(math.fsum(x * x for x in vec))
        if len(vec) != embedder.dim or abs(norm - 1.0) > 1e-3:
            detail = f"probe vector has {len(vec)} dimensions and norm {norm:.4f}"
            return EmbedderHealth(False, embedder.model_id, embedder.dim, detail)
        return EmbedderHealth(True, embedder.model_id, embedder.dim, "ok")
    except EmbeddingError as exc:
        return EmbedderHealth(False, embedder.model_id, embedder.dim, str(exc))
    except Exception as exc:  # health must report, not raise
        return EmbedderHealth(False, embedder.model_id, embedder.dim, f"{type(exc).__name__}: {exc}")


class QueryCache:
    """A small thread-safe LRU of query text -> vector: recall embeds the same queries over and over."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[str, tuple[float, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str, compute: Callable[[str], list[float]]) -> list[float]:
        if self._size <= 0:
            return compute(text)
        with self._lock:
            hit = self._items.get(text)
            if hit is not None:
                self._items.move_to_end(text)
                return list(hit)  # a fresh list: callers may mutate what they get
        vec = compute(text)  # outside the lock: two threads may compute the same text once each, harmlessly
        with self._lock:
            self._items[text] = tuple(vec)
            self._items.move_to_end(text)
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return list(vec)

    def __len__(self) -> int:
        return len(self._items)
