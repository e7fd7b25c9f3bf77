"""The KMMS consolidator back-end interface and its factory.

A back-end writes the text of L3 summaries, L2 facts and L1 abstractions and classifies contradictions; the
rules of what becomes a node live in ``governance.kmms.consolidation`` (whose ``Consolidator`` Protocol this
one mirrors, structurally). Two back-ends:

- ``inference.kmms_local.LocalConsolidator`` (``model_id`` "local-v1"): deterministic, no model; the default.
- ``inference.kmms_llm.LlmConsolidator`` (``model_id`` "llm:<model>"): an OpenAI-compatible chat endpoint,
  its JSON answers validated; malformed output is refused, retried, then ``ConsolidationError``.

Environment (``consolidator_from_env``):
- HIVEMEM_LLM_URL               set -> the LLM back-end at that base URL; unset -> the local one
- HIVEMEM_LLM_MODEL             model name (default "smollm2")
- HIVEMEM_LLM_API_KEY           Bearer token, if set
- HIVEMEM_LLM_TIMEOUT           seconds per request (default 30)
- HIVEMEM_KMMS_PROMPT_PREFIX    an org's custom instructions put before the system prompt (optional)
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Protocol

from governance.kmms.values import ContradictionClass, EpisodeText, ExtractedFact, Summary

DEFAULT_LLM_MODEL = "smollm2"


class ConsolidationError(RuntimeError):
    """The back-end could not produce a valid answer (the LLM's output stayed malformed after the retries, or
    the endpoint failed). Nothing is emitted for the batch; the processor records the failure."""


class ConsolidatorUnavailable(ConsolidationError):
    """The LLM server was down or busy on every attempt: an outage, which the processor waits out at its
    stored offset (``streams.processor.Outage``) instead of recording a failure."""


class Consolidator(Protocol):
    model_id: str  # recorded with every output, e.g. "local-v1" or "llm:smollm2"

    def summarize(self, entity: str, topic: str, window: str, episodes: Sequence[EpisodeText],
                  previous: Summary | None) -> Summary: ...  # fmt: skip

    def extract_facts(self, entity: str, summary: Summary, episodes: Sequence[EpisodeText],
                      existing: Mapping[str, str]) -> list[ExtractedFact]: ...  # fmt: skip

    def classify(self, key: str, old_value: str, new_value: str, old_quote: str,
                 new_quote: str) -> ContradictionClass: ...  # fmt: skip

    def abstract(self, entity: str, facts: Sequence[tuple[str, str]]) -> str: ...


def consolidator_from_env(env: Mapping[str, str] | None = None, prompt_prefix: str | None = None) -> Consolidator:
    """The LLM back-end when HIVEMEM_LLM_URL is set, else the local deterministic one. ``prompt_prefix`` (an
    org's custom instructions) wins over HIVEMEM_KMMS_PROMPT_PREFIX."""
    env = os.environ if env is None else env
    url = env.get("HIVEMEM_LLM_URL", "").strip()
    if not url:
        from inference.kmms_local import LocalConsolidator

        return LocalConsolidator()
    from inference.kmms_llm import LlmConsolidator

    return LlmConsolidator(
        url,
        env.get("HIVEMEM_LLM_MODEL", "").strip() or DEFAULT_LLM_MODEL,
        api_key=env.get("HIVEMEM_LLM_API_KEY") or None,
        timeout_s=float(env.get("HIVEMEM_LLM_TIMEOUT", "30")),
        prompt_prefix=prompt_prefix or env.get("HIVEMEM_KMMS_PROMPT_PREFIX") or None,
    )
