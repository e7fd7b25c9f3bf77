"""A text's token states as HiveMem keeps them: the embedding model's state of each word piece that carries content,
projected to ``DIM`` numbers and stored as signed bytes, for reading a text against a question word by word
(late interaction, ``governance.kmms.late``). Shared: the local embedder (``inference.minilm``) writes them.

What is kept of a text (``content_positions``): its word pieces but the special tokens, punctuation, single
characters and English stop words, at most ``MAX_TOKENS`` of them (the first). Each state is projected from the
model's 384 dimensions to ``DIM`` by a fixed orthonormal matrix (``projection``: derived from SHA-256, the same on
every machine), normalised and stored as signed bytes (``encode``: 128 bytes a token). Pure.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import cache

import numpy as np

FORMAT = "mx128-v1"  # the states' layout: DIM signed bytes a token, the projection below; changed means re-embedded
DIM = 128
MAX_TOKENS = 32
MODEL_DIM = 384

# NLTK's English stop words (the baseline's list, bench/memory_baseline.py), and the pieces a contraction leaves.
_STOP_TEXT = """
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself it
its itself they them their theirs themselves what which who whom this that these those am is are was were be been
being have has had having do does did doing a an the and but if or because as until while of at by for with about
against between into through during before after above below to from up down in out on off over under again further
then once here there when where why how all any both each few more most other some such no nor not only own same so
than too very s t can will just don should now d ll m o re ve y ain aren couldn didn doesn hadn hasn haven isn ma
mightn mustn needn shan shouldn wasn weren won wouldn
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())
_PIECE = re.compile(r"(?:##)?[a-z0-9']+")
_SPECIAL = frozenset({"[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]"})


def content_positions(tokens: Sequence[str], limit: int = MAX_TOKENS) -> list[int]:
    """The positions of a text's word pieces that carry its content: not a special token, punctuation, a single
    character or a stop word; the first ``limit`` of them. A text of none keeps its first piece, if it has one."""
    keep = [i for i, t in enumerate(tokens)
            if t not in _SPECIAL and _PIECE.fullmatch(t) and len(t.lstrip("#")) > 1
            and t.lstrip("#") not in STOP_WORDS]  # fmt: skip
    if not keep:
        keep = [i for i, t in enumerate(tokens) if t not in _SPECIAL][:1]
    return keep[:limit]


@cache
def projection() -> np.ndarray:
    """The fixed ``MODEL_DIM`` x ``DIM`` matrix with orthonormal columns that maps a token state to ``DIM`` numbers:
    standard normal draws read from SHA-256 in counter mode (Box-Muller), made orthonormal by QR."""
    n = MODEL_DIM * DIM
    raw = b"".join(hashlib.sha256(f"hivemem-late-{FORMAT}-{i}".encode()).digest() for i in range((n * 8 + 31) // 32))
    u = np.frombuffer(raw[: n * 8], dtype="<u4").astype(np.float64).reshape(-1, 2) + 0.5
    u /= 2.0**32
    gauss = np.sqrt(-2.0 * np.log(u[:, 0])) * np.cos(2.0 * np.pi * u[:, 1])
    q, r = np.linalg.qr(gauss.reshape(MODEL_DIM, DIM))
    return (q * np.sign(np.diag(r))).astype(np.float32)  # signs fixed: QR's are the library's choice


def project(states: np.ndarray) -> np.ndarray:
    """Token states (tokens x ``MODEL_DIM``) projected to ``DIM`` and normalised, as float32."""
    if states.size == 0:
        return np.zeros((0, DIM), dtype=np.float32)
    v = np.asarray(states, dtype=np.float32) @ projection()
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return (v / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def encode(states: np.ndarray) -> bytes:
    """A text's kept token states (tokens x ``MODEL_DIM``, ``content_positions``' rows) as stored: projected,
    normalised, each number times 127 rounded to a signed byte, row after row."""
    v = project(states)
    return np.clip(np.rint(v * 127.0), -127, 127).astype(np.int8).tobytes()


def decode(data: bytes) -> np.ndarray:
    """Stored states (``encode``) as float32 rows of ``DIM``; none for empty or malformed bytes."""
    if not data or len(data) % DIM:
        return np.zeros((0, DIM), dtype=np.float32)
    return np.frombuffer(data, dtype=np.int8).reshape(-1, DIM).astype(np.float32) / 127.0
