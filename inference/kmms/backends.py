"""The KMMS consolidator back-end chosen by the environment (its interface: governance.kmms.consolidation).

A module of its own: it imports both back-ends, which import the interface.

Environment (``consolidator_from_env``):
- HIVEMEM_LLM_URL               set -> the LLM back-end at that base URL; unset -> the local one
- HIVEMEM_LLM_MODEL             model name (default "smollm2")
- HIVEMEM_LLM_API_KEY           Bearer token, if set
- HIVEMEM_LLM_TIMEOUT           seconds per request (default 30)
- HIVEMEM_KMMS_PROMPT_PREFIX    an org's custom instructions put before the system prompt (optional)
"""

from __future__ import annotations

from collections.abc import Mapping

from governance.kmms.consolidation import Consolidator
from inference.llm_chat import DEFAULT_LLM_MODEL


def consolidator_from_env(env: Mapping[str, str], prompt_prefix: str | None = None) -> Consolidator:
    """The LLM back-end when HIVEMEM_LLM_URL is set, else the local deterministic one. ``prompt_prefix`` (an
    org's custom instructions) wins over HIVEMEM_KMMS_PROMPT_PREFIX."""
    url = env.get("HIVEMEM_LLM_URL", "").strip()
    if not url:
        from inference.kmms.local import LocalConsolidator

        return LocalConsolidator()
    from inference.kmms.llm import LlmConsolidator

    return LlmConsolidator(
        url,
        env.get("HIVEMEM_LLM_MODEL", "").strip() or DEFAULT_LLM_MODEL,
        api_key=env.get("HIVEMEM_LLM_API_KEY") or None,
        timeout_s=float(env.get("HIVEMEM_LLM_TIMEOUT", "30")),
        prompt_prefix=prompt_prefix or env.get("HIVEMEM_KMMS_PROMPT_PREFIX") or None,
    )
