"""Unit vectors the bench's baseline computed before, kept on disk by model and text (``hivemem bench memory``).

The baseline embeds every distinct unit text of the corpus with the product's embedder before the stack starts:
LoCoMo's 5,880 texts in about 30 s, a 50-question LongMemEval-S sample's 26,718 (long assistant replies) in about
20 minutes on one core. A second run of the same corpus reads them here instead. A vector is kept under its
model's id (``embedder.model_id``) and the SHA-256 of its text: the embedder gives a text the same vector whatever
else is embedded with it (int8 arithmetic runs one text at a time; fp32's padding changes nothing), so a kept
vector is the one the run would compute. A new model id is a new key, never a stale vector. An embeddings
server's model id names its model and host (``openai:<model>@<host>``): a server that changes the weights behind
a name is run with ``--no-baseline-cache``.

One SQLite file (the standard library's), written once per batch. A file SQLite cannot read stops the run with
SQLite's error; ``--no-baseline-cache`` runs without one.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

DIM_DTYPE = np.float64  # as the baseline keeps its vectors (normalised in float64)


def default_path(env: Mapping[str, str] = os.environ) -> Path:
    """``$XDG_CACHE_HOME/hivemem/baseline-vectors.sqlite`` (``~/.cache`` when unset)."""
    root = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "hivemem" / "baseline-vectors.sqlite"


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class VectorCache:
    """Vectors by (model id, text). ``get`` and ``put`` take many at once: one statement a batch."""

    def __init__(self, path: Path, model: str) -> None:
        self.model = model
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, text_sha256 TEXT NOT NULL, "
                         "vector BLOB NOT NULL, PRIMARY KEY (model, text_sha256))")  # fmt: skip
        self._db.commit()

    def get(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The kept vectors of those of ``texts`` that have one."""
        by_key = {_key(t): t for t in texts}
        found: dict[str, np.ndarray] = {}
        keys = list(by_key)
        for start in range(0, len(keys), 500):  # under SQLite's limit of bound parameters
            part = keys[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self._db.execute(
                f"SELECT text_sha256, vector FROM vectors WHERE model = ? AND text_sha256 IN ({marks})",
                [self.model, *part],
            )
            for key, blob in rows:
                found[by_key[key]] = np.frombuffer(blob, dtype=DIM_DTYPE).copy()
        return found

    def put(self, vectors: Mapping[str, np.ndarray]) -> None:
        self._db.executemany(
            "INSERT OR REPLACE INTO vectors (model, text_sha256, vector) VALUES (?, ?, ?)",
            [(self.model, _key(t), np.asarray(v, dtype=DIM_DTYPE).tobytes()) for t, v in vectors.items()],
        )
        self._db.commit()

    def close(self) -> None:
        self._db.close()
