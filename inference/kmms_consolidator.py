"""The KMMS consolidator back-end interface (its factory is ``inference.kmms_backends``).

A back-end writes the text of L3 summaries, L2 facts and L1 abstractions and classifies contradictions; the
rules of what becomes a node live in ``governance.kmms.consolidation`` (whose ``Consolidator`` Protocol this
one mirrors, structurally). Two back-ends:

- ``inference.kmms_local.LocalConsolidator`` (``model_id`` "local-v1"): deterministic, no model; the default.
- ``inference.kmms_llm.LlmConsolidator`` (``model_id`` "llm:<model>"): an OpenAI-compatible chat endpoint,
  its JSON answers validated; malformed output is refused, retried, then ``ConsolidationError``.
"""

from __future__ import annotations

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
