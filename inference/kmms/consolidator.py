"""What the KMMS consolidator back-ends share besides their interface: their errors and the default LLM model
(the interface is ``governance.kmms.consolidation.Consolidator``; the factory ``inference.kmms.backends``).

A back-end writes the text of L3 summaries, L2 facts and L1 abstractions and classifies contradictions; the
rules of what becomes a node live in ``governance.kmms.consolidation``. Two back-ends:

- ``inference.kmms.local.LocalConsolidator`` (``model_id`` "local-v1"): deterministic, no model; the default.
- ``inference.kmms.llm.LlmConsolidator`` (``model_id`` "llm:<model>"): an OpenAI-compatible chat endpoint,
  its JSON answers validated; malformed output is refused, retried, then ``ConsolidationError``.
"""

from __future__ import annotations


class ConsolidationError(RuntimeError):
    """The back-end could not produce a valid answer (the LLM's output stayed malformed after the retries, or
    the endpoint failed). Nothing is emitted for the batch; the processor records the failure."""


class ConsolidatorUnavailable(ConsolidationError):
    """The LLM server was down or busy on every attempt: an outage, which the processor waits out at its
    stored offset (``streams.processor.Outage``) instead of recording a failure."""
