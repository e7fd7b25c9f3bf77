"""What a result file says about the settings it ran with: the memory's and the embedder's variables set in the
environment (``HIVEMEM_KMMS_*``, ``HIVEMEM_EMBEDDINGS_*``), so two runs of an A/B name their difference."""

from __future__ import annotations

from collections.abc import Mapping

PREFIXES = ("HIVEMEM_KMMS_", "HIVEMEM_EMBEDDINGS_")


def settings_line(environ: Mapping[str, str]) -> str:
    """``settings: defaults ...`` or ``settings: NAME=value, ...`` in name order."""
    chosen = sorted((k, v) for k, v in environ.items() if k.startswith(PREFIXES))
    if not chosen:
        return f"settings: defaults (no {' or '.join(p + '*' for p in PREFIXES)} variable set)"
    return "settings: " + ", ".join(f"{k}={v}" for k, v in chosen)
