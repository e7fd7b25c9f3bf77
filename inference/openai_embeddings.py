"""Sentence embeddings from an OpenAI-compatible ``POST /v1/embeddings`` endpoint (vLLM, TEI, llama.cpp, Ollama...).

Optional: used only when HIVEMEM_EMBEDDINGS_URL is set. The server's model must give 384-d vectors (HiveMem stores
384); anything else is refused with a ``dimension_mismatch`` error rather than stored. Vectors are L2-normalised
here, since not every server normalises.
"""

from __future__ import annotations

import base64
import struct
import threading
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx

from inference.embedding_base import (
    BAD_INPUT,
    BAD_RESPONSE,
    CONFIG,
    EMBEDDING_DIM,
    UPSTREAM_ERROR,
    UPSTREAM_TIMEOUT,
    UPSTREAM_UNAVAILABLE,
    EmbedderHealth,
    EmbeddingError,
    QueryCache,
    check_texts,
    normalise,
    probe,
)


def embeddings_endpoint(url: str) -> str:
    """The POST address for ``url``: a base URL as OpenAI clients take it (``http://host:8080/v1``), a bare host
    (``/v1`` assumed), or the full ``.../embeddings`` address."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EmbeddingError(CONFIG, f"embeddings URL {url!r} is not an http(s) URL")
    path = parts.path.rstrip("/")
    if not path.endswith("/embeddings"):
        path = (path or "/v1") + "/embeddings"
    return parts._replace(path=path, query="", fragment="").geturl()


class OpenAIEmbedder:
    def __init__(
        self,
        url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 10.0,
        batch_size: int = 64,
        cache_size: int = 1024,
        dim: int = EMBEDDING_DIM,
    ) -> None:
        if not model:
            raise EmbeddingError(CONFIG, "an OpenAI-compatible embeddings endpoint needs a model name")
        if batch_size < 1 or timeout <= 0:
            raise EmbeddingError(CONFIG, "batch_size must be >= 1 and timeout > 0")
        self.endpoint = embeddings_endpoint(url)
        parts = urlsplit(self.endpoint)
        host = parts.hostname or ""
        # No user-info in the id: it is stored with every vector.
        self.model_id = f"openai:{model}@{host}" + (f":{parts.port}" if parts.port else "")
        self.model = model
        self.dim = dim
        self.timeout = timeout
        self.batch_size = batch_size
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()
        self._cache = QueryCache(cache_size)

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIEmbedder(endpoint={self.endpoint!r}, model={self.model!r})"

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(timeout=self.timeout, headers=self._headers)
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        items = check_texts(texts)
        out: list[list[float]] = []
        for start in range(0, len(items), self.batch_size):
            out.extend(self._request(items[start : start + self.batch_size]))
        return out

    def embed_query(self, text: str) -> list[float]:
        if not isinstance(text, str):
            raise EmbeddingError(BAD_INPUT, f"query is {type(text).__name__}, not str")
        return self._cache.get(text, lambda t: self.embed([t])[0])

    def health(self) -> EmbedderHealth:
        return probe(self)

    def _request(self, batch: list[str]) -> list[list[float]]:
        body = {"model": self.model, "input": batch, "encoding_format": "float"}
        try:
            resp = self._http().post(self.endpoint, json=body)
        except httpx.TimeoutException as exc:
            raise EmbeddingError(UPSTREAM_TIMEOUT, f"{self.endpoint} did not answer in {self.timeout}s") from exc
        except httpx.HTTPError as exc:
            raise EmbeddingError(UPSTREAM_UNAVAILABLE, f"{self.endpoint}: {type(exc).__name__}: {exc}") from exc
        if resp.status_code != 200:
            # 5xx, 408 and 429 say "not now" (the caller retries later); another 4xx refuses this input.
            busy = resp.status_code >= 500 or resp.status_code in (408, 429)
            raise EmbeddingError(UPSTREAM_UNAVAILABLE if busy else UPSTREAM_ERROR,
                                 f"{self.endpoint} answered {resp.status_code}: {resp.text[:300]}")  # fmt: skip
        try:
            data = resp.json()["data"]
            rows = sorted(data, key=lambda d: int(d["index"]))
            vectors = [_vector(d["embedding"]) for d in rows]
        except (ValueError, KeyError, TypeError, struct.error) as exc:
            raise EmbeddingError(BAD_RESPONSE, f"{self.endpoint}: not an OpenAI embeddings response ({exc})") from exc
        if len(vectors) != len(batch) or [int(d["index"]) for d in rows] != list(range(len(batch))):
            raise EmbeddingError(BAD_RESPONSE, f"{self.endpoint}: {len(vectors)} embeddings for {len(batch)} inputs")
        return [normalise(v, self.dim, f"{self.model_id} embedding") for v in vectors]


def _vector(raw: Any) -> list[float]:
    if isinstance(raw, str):  # a server that answers base64 whatever encoding_format says: little-endian float32
        packed = base64.b64decode(raw, validate=True)
        return list(struct.unpack(f"<{len(packed) // 4}f", packed))
    if not isinstance(raw, list):
        raise TypeError(f"embedding is {type(raw).__name__}")
    return [float(x) for x in raw]
