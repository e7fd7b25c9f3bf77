"""Sentence embeddings for HiveMem: the ``Embedder`` protocol and the back-end chosen from the environment.

Default: all-MiniLM-L6-v2 (int8 ONNX) run locally on onnxruntime, no network (``MiniLmEmbedder``).
With ``HIVEMEM_EMBEDDINGS_URL`` set: an OpenAI-compatible ``/v1/embeddings`` server (``OpenAIEmbedder``).

Environment:
- HIVEMEM_EMBEDDINGS_URL      base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1
- HIVEMEM_EMBEDDINGS_MODEL    model name sent to it (required with the URL)
- HIVEMEM_EMBEDDINGS_API_KEY  sent as a Bearer token, if set
- HIVEMEM_EMBEDDINGS_TIMEOUT  seconds per request to it (default 10)
- HIVEMEM_EMBEDDINGS_THREADS  onnxruntime intra-op threads for the local model (default 1)
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from inference.embedding_base import (
    CONFIG,
    EMBEDDING_DIM,
    Embedder,
    EmbedderHealth,
    EmbeddingError,
)
from inference.minilm import DEFAULT_THREADS, MAX_TOKENS, MiniLmEmbedder
from inference.openai_embeddings import OpenAIEmbedder

__all__ = [
    "EMBEDDING_DIM",
    "MAX_TOKENS",
    "Embedder",
    "EmbedderHealth",
    "EmbeddingError",
    "MiniLmEmbedder",
    "OpenAIEmbedder",
    "embedder_from_env",
]


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise EmbeddingError(CONFIG, f"{name}={raw!r} is not a number") from None
    if value <= 0:
        raise EmbeddingError(CONFIG, f"{name} must be > 0")
    return value


def embedder_from_env(env: Mapping[str, str] = os.environ) -> Embedder:
    """The configured back-end; nothing is loaded or contacted until first use."""
    url = env.get("HIVEMEM_EMBEDDINGS_URL", "").strip()
    if url:
        model = env.get("HIVEMEM_EMBEDDINGS_MODEL", "").strip()
        if not model:
            raise EmbeddingError(CONFIG, "HIVEMEM_EMBEDDINGS_URL is set but HIVEMEM_EMBEDDINGS_MODEL is not")
        return OpenAIEmbedder(
            url,
            model,
            api_key=env.get("HIVEMEM_EMBEDDINGS_API_KEY", "").strip() or None,
            timeout=_number(env, "HIVEMEM_EMBEDDINGS_TIMEOUT", 10.0),
        )
    threads = _number(env, "HIVEMEM_EMBEDDINGS_THREADS", DEFAULT_THREADS)
    if threads != int(threads):
        raise EmbeddingError(CONFIG, "HIVEMEM_EMBEDDINGS_THREADS must be a whole number")
    return MiniLmEmbedder(threads=int(threads))
