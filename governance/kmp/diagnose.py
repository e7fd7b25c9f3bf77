"""Why an answer failed: the first stage of the pipeline where the material that should support it
was lost.

The pipeline, in order, and the gap named after the stage that lost refs:

1. INGESTION_GAP — expected refs never accepted on the log (``expected - logged``).
2. PROJECTION_GAP — logged but not in the read model at the answer's known-at (``- projected``).
3. RETRIEVAL_GAP — projected but not returned by ask (``- retrieved``).
4. PROOF_GAP — returned but without evidence (``- proven``).
5. READER_GAP — returned with proof but the reader did not cite them (``- used``).
6. REASONING_GAP — the reader had and cited every expected ref, and still answered wrong.

Decisions (beyond the brief):

* A correct answer is NONE, whatever was lost on the way (a correct answer is not diagnosed).
* Each stage is measured against ``expected``, so a ref a later stage has but an earlier one lacks
  (an inconsistent report) is lost at the earlier stage; refs outside ``expected`` are ignored.
* REASONING_GAP and NONE return no refs: nothing was lost. With an empty ``expected`` a wrong answer
  is a REASONING_GAP (there was nothing to lose).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

FailureClass = Literal[
    "INGESTION_GAP", "PROJECTION_GAP", "RETRIEVAL_GAP", "PROOF_GAP", "READER_GAP", "REASONING_GAP", "NONE"
]


@dataclass(frozen=True)
class AnswerFacts:
    expected: frozenset[str]  # refs that should support the answer
    logged: frozenset[str]  # accepted on the log
    projected: frozenset[str]  # in the read model at known_at
    retrieved: frozenset[str]  # returned by ask
    proven: frozenset[str]  # returned with evidence
    used: frozenset[str]  # cited by the reader
    correct: bool


def classify(f: AnswerFacts) -> tuple[FailureClass, frozenset[str]]:
    """The first gap in pipeline order and the expected refs lost there."""
    if f.correct:
        return "NONE", frozenset()
    stages: tuple[tuple[FailureClass, frozenset[str]], ...] = (
        ("INGESTION_GAP", f.logged),
        ("PROJECTION_GAP", f.projected),
        ("RETRIEVAL_GAP", f.retrieved),
        ("PROOF_GAP", f.proven),
        ("READER_GAP", f.used),
    )
    for failure, reached in stages:
        lost = f.expected - reached
        if lost:
            return failure, frozenset(lost)
    return "REASONING_GAP", frozenset()
