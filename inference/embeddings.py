"""Sentence embeddings for HiveMem: the ``Embedder`` protocol and the back-end chosen from the environment.

Default: all-MiniLM-L6-v2 (int8 ONNX) run locally on onnxruntime, no network (``MiniLmEmbedder``).
With ``HIVEMEM_EMBEDDINGS_URL`` set: an OpenAI-compatible ``/v1/embeddings`` server (``OpenAIEmbedder``).

Environment:
- HIVEMEM_EMBEDDINGS_URL      base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1
- HIVEMEM_EMBEDDINGS_MODEL    model name sent to it (required with the URL)
- HIVEMEM_EMBEDDINGS_API_KEY  sent as a Bearer token, if set
- HIVEMEM_EMBEDDINGS_TIMEOUT  seconds per request to it (default 10)
- HIVEMEM_EMBEDDINGS_THREADS  onnxruntime intra-op threads for the local model (default 1)
- HIVEMEM_EMBEDDINGS_WORKERS  texts the local model embeds side by side, each run on its own (default 2, or 1 on
                              one core)
- HIVEMEM_EMBEDDINGS_ARITHMETIC  the local model's arithmetic: int8 (default) or fp32 (the vectors of
                              deployments before 2026-11-28; each is its own model id, inference/minilm.py)
- HIVEMEM_MODEL_CACHE         where the local model's int8 build is kept (default $XDG_CACHE_HOME/hivemem, else
                              $HOME/.cache/hivemem)

While the model is being changed (docs/kmms.md, "Changing the embedding model"), the model switched away from:
- HIVEMEM_EMBEDDINGS_PREVIOUS=local            the bundled MiniLM (HIVEMEM_EMBEDDINGS_PREVIOUS_ARITHMETIC: its
                                               arithmetic, int8 unless set), or
- HIVEMEM_EMBEDDINGS_PREVIOUS_URL, _MODEL, _API_KEY, _TIMEOUT   an OpenAI-compatible server, as above
"""

from __future__ import annotations

from collections.abc import Mapping

from inference.embedding_base import (
    CONFIG,
    EMBEDDING_DIM,
    Embedder,
    EmbedderHealth,
    EmbeddingError,
)
from inference.minilm import (
    ARITHMETICS,
    DEFAULT_ARITHMETIC,
    DEFAULT_THREADS,
    DEFAULT_WORKERS,
    MAX_TOKENS,
    MiniLmEmbedder,
)
from inference.minilm_int8 import cache_dir
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
    "previous_embedder_from_env",
]
PREVIOUS = "HIVEMEM_EMBEDDINGS_PREVIOUS"


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


def _count(env: Mapping[str, str], name: str, default: int) -> int:
    """A whole number > 0 (threads, workers)."""
    value = _number(env, name, default)
    if value != int(value):
        raise EmbeddingError(CONFIG, f"{name} must be a whole number")
    return int(value)


def embedder_from_env(env: Mapping[str, str]) -> Embedder:
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
    threads = _count(env, "HIVEMEM_EMBEDDINGS_THREADS", DEFAULT_THREADS)
    arithmetic = env.get("HIVEMEM_EMBEDDINGS_ARITHMETIC", "").strip().lower() or DEFAULT_ARITHMETIC
    if arithmetic not in ARITHMETICS:
        raise EmbeddingError(CONFIG, f"HIVEMEM_EMBEDDINGS_ARITHMETIC must be one of {', '.join(ARITHMETICS)}, "
                             f"not {arithmetic!r}")  # fmt: skip
    return MiniLmEmbedder(threads=threads, arithmetic=arithmetic, model_cache=cache_dir(env),
                          workers=_count(env, "HIVEMEM_EMBEDDINGS_WORKERS", DEFAULT_WORKERS))  # fmt: skip


def previous_embedder_from_env(env: Mapping[str, str]) -> Embedder | None:
    """The model a switch moves away from (``HIVEMEM_EMBEDDINGS_PREVIOUS=local`` or ``..._PREVIOUS_URL`` and
    ``..._PREVIOUS_MODEL``), or None when no switch is under way."""
    flag = env.get(PREVIOUS, "").strip().lower()
    url = env.get(f"{PREVIOUS}_URL", "").strip()
    if not flag and not url:
        return None
    if flag and flag != "local":
        raise EmbeddingError(CONFIG, f"{PREVIOUS} must be 'local' (or use {PREVIOUS}_URL), not {flag!r}")
    if flag and url:
        raise EmbeddingError(CONFIG, f"set {PREVIOUS}=local or {PREVIOUS}_URL, not both")
    # The previous model's settings under the names embedder_from_env reads.
    sub = {f"HIVEMEM_EMBEDDINGS_{k[len(PREVIOUS) + 1 :]}": v for k, v in env.items() if k.startswith(f"{PREVIOUS}_")}
    shared_names = ("HIVEMEM_EMBEDDINGS_THREADS", "HIVEMEM_EMBEDDINGS_WORKERS", "HIVEMEM_MODEL_CACHE", "XDG_CACHE_HOME",
                    "HOME")  # fmt: skip
    for shared in shared_names:
        if shared in env:
            sub.setdefault(shared, env[shared])
    return embedder_from_env(sub)
