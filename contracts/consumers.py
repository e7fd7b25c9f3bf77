"""Processor names that other parts read by: the embedders' offsets and progress rows are looked up by name
(the API's /readyz, the KMMS model switch), and each name carries its model's digest, so a changed model
is a new consumer that embeds everything again while the old one's vectors keep serving."""

from __future__ import annotations

import hashlib


def _digest(model_id: str) -> str:
    return hashlib.sha256(model_id.encode()).hexdigest()[:8]


def embedder_name(model_id: str) -> str:
    """The CAML embedder of ``model_id``."""
    return f"caml-embedder-{_digest(model_id)}"


def kmms_embedder_name(model_id: str) -> str:
    """The KMMS embedder of ``model_id``."""
    return f"kmms-embedder-{_digest(model_id)}"
