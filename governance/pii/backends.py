"""What the cascade needs from its model back-ends (stage 2 NER, stage 3 classifier): protocols and the
values they return. Implementations live in ``inference/``; nothing here loads a model or opens a socket.

No value carries the scanned text: spans are labels, word counts, scores and offsets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

# Stage-2 labels (seed 000, §7.1, C-18).
PERSON = "person"
ADDRESS = "address"
DATE_OF_BIRTH = "date_of_birth"
FINANCIAL_ACCOUNT = "financial_account"
MEDICAL_RECORD = "medical_record"
GOVERNMENT_ID = "government_id"
NER_LABELS = (PERSON, ADDRESS, DATE_OF_BIRTH, FINANCIAL_ACCOUNT, MEDICAL_RECORD, GOVERNMENT_ID)

# Stage-3 categories of implicit PII.
INDIRECT_REFERENCE = "indirect_reference"  # "the user in Mumbai who ..."
QUASI_IDENTIFIER = "quasi_identifier"  # age + gender + location, ...
HEALTH_INDIVIDUAL = "health_individual"  # health information tied to one person
OTHER_PERSONAL = "other_personal"  # any other personal detail about an identifiable person
IMPLICIT_CATEGORIES = (INDIRECT_REFERENCE, QUASI_IDENTIFIER, HEALTH_INDIVIDUAL, OTHER_PERSONAL)


@dataclass(frozen=True)
class NerSpan:
    """One candidate entity. ``word_count`` counts the entity's words (a person's title excluded);
    ``score`` is in [0, 1], its meaning defined by the back-end; ``start``/``end`` are character offsets."""

    label: str
    word_count: int
    score: float
    start: int
    end: int


@dataclass(frozen=True)
class ImplicitVerdict:
    """A stage-3 decision. ``category`` is one of IMPLICIT_CATEGORIES when ``pii``, else None."""

    pii: bool
    category: str | None = None
    confidence: float = 1.0


@runtime_checkable
class NerBackend(Protocol):
    def entities(self, text: str) -> list[NerSpan]:
        """Candidate entities of ``text`` with their scores, below the threshold too (the cascade decides)."""
        ...


@runtime_checkable
class ImplicitClassifier(Protocol):
    def classify(self, text: str) -> ImplicitVerdict | None:
        """A decision, or None when none could be had (unreachable, timed out, malformed twice)."""
        ...
