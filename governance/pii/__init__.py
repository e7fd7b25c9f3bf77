"""The PII cascade (seed 000, §7): stage 1 regex, stage 2 NER, stage 3 LLM or local rule. Pure: no network,
no model loading; the model back-ends are passed in (``inference.ner``, ``inference.pii_llm``)."""

from governance.pii.backends import (
    ADDRESS,
    DATE_OF_BIRTH,
    FINANCIAL_ACCOUNT,
    GOVERNMENT_ID,
    HEALTH_INDIVIDUAL,
    IMPLICIT_CATEGORIES,
    INDIRECT_REFERENCE,
    MEDICAL_RECORD,
    NER_LABELS,
    OTHER_PERSONAL,
    PERSON,
    QUASI_IDENTIFIER,
    ImplicitClassifier,
    ImplicitVerdict,
    NerBackend,
    NerSpan,
)
from governance.pii.cascade import LLM, LOCAL_RULE, NER, REGEX, PiiPolicy, PiiVerdict, scan
from governance.pii.regex_stage import CATEGORIES as REGEX_CATEGORIES
from governance.pii.regex_stage import RegexResult

__all__ = [
    "ADDRESS",
    "DATE_OF_BIRTH",
    "FINANCIAL_ACCOUNT",
    "GOVERNMENT_ID",
    "HEALTH_INDIVIDUAL",
    "IMPLICIT_CATEGORIES",
    "INDIRECT_REFERENCE",
    "LLM",
    "LOCAL_RULE",
    "MEDICAL_RECORD",
    "NER",
    "NER_LABELS",
    "OTHER_PERSONAL",
    "PERSON",
    "QUASI_IDENTIFIER",
    "REGEX",
    "REGEX_CATEGORIES",
    "ImplicitClassifier",
    "ImplicitVerdict",
    "NerBackend",
    "NerSpan",
    "PiiPolicy",
    "PiiVerdict",
    "RegexResult",
    "scan",
]
