"""Wiring KMMS's back-ends from the environment: the enricher (``HIVEMEM_KMMS_NER``), the
consolidator (an OpenAI-compatible LLM at ``HIVEMEM_LLM_URL``, else the local deterministic one)
the consolidation batch (``HIVEMEM_KMMS_BATCH``, default 3 episodes per entity and topic), whether a round's vector
reads its replies too (``HIVEMEM_KMMS_ROUND_REPLIES``, default off) and whether a user's round with replies gets a
second vector of its whole text (``HIVEMEM_KMMS_ROUND_WHOLE``, default off). ``HIVEMEM_KMMS_ROUND_SENTENCES`` (a
user's round's sentences embedded too) was removed on 2026-12-05: set, it is refused by name."""

from __future__ import annotations

import os

from governance.kmms.consolidation import DEFAULT_BATCH, Consolidator
from processors.kmms.enricher import Enricher


def enricher() -> Enricher:
    from inference.kmms.enrich import enricher_from_env

    return enricher_from_env(os.environ)


def consolidator() -> Consolidator:
    from inference.kmms.backends import consolidator_from_env

    return consolidator_from_env(os.environ)


def consolidation_batch() -> int:
    raw = os.environ.get("HIVEMEM_KMMS_BATCH", str(DEFAULT_BATCH))
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"HIVEMEM_KMMS_BATCH must be a positive integer, not {raw!r}")
    return int(raw)


def _switch(name: str) -> bool:
    raw = os.environ.get(name, "0").strip().lower()
    if raw not in ("0", "1", "true", "false", "yes", "no", ""):
        raise ValueError(f"{name} must be 0 or 1, not {raw!r}")
    return raw in ("1", "true", "yes")


def round_replies() -> bool:
    """Whether a round's vector reads its replies too (``HIVEMEM_KMMS_ROUND_REPLIES``, default off: its user's
    lines only, ``governance.kmms.phrasing.embedding_text``)."""
    return _switch("HIVEMEM_KMMS_ROUND_REPLIES")


def no_removed_switches() -> None:
    """Refuse, by name, an embedder switch that was removed (rather than ignore it)."""
    if "HIVEMEM_KMMS_ROUND_SENTENCES" in os.environ:
        raise ValueError("HIVEMEM_KMMS_ROUND_SENTENCES: removed on 2026-12-05 (a user's round's sentences embedded "
                         "too changed no ranking on public conversations; docs/kmms.md): unset it")  # fmt: skip


def round_whole() -> bool:
    """Whether a user's round with replies has a second vector, the whole round's (``HIVEMEM_KMMS_ROUND_WHOLE``):
    the search then ranks it by the better of its user's lines and the whole."""
    return _switch("HIVEMEM_KMMS_ROUND_WHOLE")
