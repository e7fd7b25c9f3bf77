"""The PII cascade: the hard gate on observations (seed 000, §7, C-16..C-20), with the escalation rule that
SPEC X-5 asks for.

Stage 1 (regex) always runs and rejects on any hit. Under the ``cascade`` policy, stage 2 (NER) runs when
the text has name- or address-like material (a capitalised multi-word run that is not an organisation name,
a house number before a capitalised word, a location or street word, a PII cue word such as "born",
"account", "MRN", "Mr."), when stage 1 suppressed a near miss (safe email domain, private IP, short digit
run, Luhn-invalid number, ...), or when quasi-identifier cues appear (stage 3 will be wanted; the stages stay
in order). Stage 3 runs when stage 2's best eligible score is in the LLM band
[0.35, 0.65), when quasi-identifier cues appear (location + demographic or health term), or when stage 2 was
wanted but no NER back-end was given. The ``always`` policy runs every stage.

Stage 2 rules: a span is PII when its label is one of the six, a person has 2+ words, an address 3+ words,
and its score is >= the threshold (0.65). Stage 3 is the LLM classifier when one is given and it decides;
otherwise, or when it returns no decision (unreachable, malformed twice), the local rule decides
(``implicit_rule``): the text is never taken as clean without a rule having run.

Exceptions from the NER back-end propagate: the caller fails closed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from governance.pii import implicit_rule, regex_stage
from governance.pii.backends import (
    ADDRESS,
    IMPLICIT_CATEGORIES,
    NER_LABELS,
    PERSON,
    ImplicitClassifier,
    NerBackend,
    NerSpan,
)

REGEX, NER, LLM, LOCAL_RULE = "regex", "ner", "llm", "local-rule"
Escalation = Literal["cascade", "always"]


@dataclass(frozen=True)
class PiiPolicy:
    escalation: Escalation = "cascade"
    ner_threshold: float = 0.65
    llm_band: tuple[float, float] = (0.35, 0.65)
    safe_email_domains: frozenset[str] = field(default_factory=frozenset)  # added to the reserved defaults

    def __post_init__(self) -> None:
        if self.escalation not in ("cascade", "always"):
            raise ValueError(f"unknown escalation policy {self.escalation!r}")
        if not 0.0 < self.ner_threshold <= 1.0:
            raise ValueError("ner_threshold must be in (0, 1]")
        lo, hi = self.llm_band
        if not 0.0 <= lo <= hi <= 1.0:
            raise ValueError("llm_band must be 0 <= low <= high <= 1")
        object.__setattr__(self, "safe_email_domains", frozenset(d.lower().strip(".") for d in self.safe_email_domains))


@dataclass(frozen=True)
class PiiVerdict:
    """The cascade's decision. Nothing in it comes from the scanned text.

    ``stage_hit``: "regex" | "ner" | "llm" | "local-rule" when not clean. ``stages_run`` in order.
    ``escalation``: why each stage past the first ran, e.g. ``"s2=capitalised-run+near-miss-private-ip;
    s3=ner-band;llm-undecided"``, or ``"none"``. ``category``: the stage's internal category, for metrics only.
    """

    clean: bool
    stage_hit: str | None
    stages_run: tuple[str, ...]
    escalation: str
    category: str | None


# Capitalised runs that end in one of these name an organisation, a law or a team, not a person or place.
ORG_SUFFIXES = frozenset({
    "corp", "corporation", "inc", "ltd", "limited", "llc", "llp", "plc", "gmbh", "bank", "group", "team",
    "department", "dept", "services", "solutions", "systems", "technologies", "labs", "partners", "holdings",
    "insurance", "hospital", "hospitals", "clinic", "university", "college", "council", "authority", "board",
    "ministry", "agency", "court", "tribunal", "act", "regulation", "regulations", "rules", "policy", "committee",
    "office", "centre", "center", "foundation", "trust", "logistics", "pharma", "pharmaceuticals", "healthcare",
    "capital", "finance", "airlines", "airways", "railways", "exchange", "commission", "directive", "framework",
    "standard", "protocol", "cloud", "platform", "portal", "desk", "unit", "division", "retail", "enterprises",
    "traders", "trading", "telecom", "motors", "industries", "foods", "energy", "media", "consulting", "ventures",
    "associates", "networks", "software", "stores", "mart"
})  # fmt: skip
_LEADING_STOPWORDS = frozenset({
    "the", "a", "an", "our", "their", "this", "that", "these", "those", "we", "in", "on", "at", "for", "after",
    "before", "during", "when", "if", "its", "each", "every", "all", "some", "any", "no", "most", "many"
})  # fmt: skip
_CAP_RUN = re.compile(r"\b[A-Z][a-z]+(?:[ -][A-Z][a-z]+)+\b")
_HOUSE_NUMBER = re.compile(r"\b\d{1,5}[A-Za-z]?,?\s+[A-Z][a-z]+")
_STREET_WORD = re.compile(
    r"\b(?:street|st\.|road|rd\.|avenue|ave\.|lane|boulevard|blvd|drive|marg|nagar|sector|apartment|apt\.?|flat|"
    r"floor|block|building|house no|colony|pin ?code|zip ?code|postcode)\b",
    re.IGNORECASE,
)
_PII_CUE = re.compile(
    r"\b(?:born|birth|dob|birthday|account|acct|a/c|iban|swift|routing|sort code|mrn|medical record|patient id|"
    r"patient no|health id|uhid|nhs number|licen[cs]e|passport|national id|voter id|ssn|aadhaar|aadhar|pan|"
    r"tax id|tin|address|lives at|resides|mr\.?|mrs\.?|ms\.?|dr\.?|prof\.?|shri|smt\.?)\b",
    re.IGNORECASE,
)
_LOCATION = re.compile(rf"\b(?:{implicit_rule.LOCATION_WORDS})\b", re.IGNORECASE)


def _capitalised_run(text: str) -> bool:
    for m in _CAP_RUN.finditer(text):
        words = re.split(r"[ -]", m.group())
        while words and words[0].lower() in _LEADING_STOPWORDS:
            words = words[1:]
        if len(words) >= 2 and words[-1].lower() not in ORG_SUFFIXES:
            return True
    return False


def stage2_reasons(text: str, near_misses: Iterable[str] = ()) -> tuple[str, ...]:
    """Why stage 2 should run on ``text`` under the cascade policy (empty: it need not)."""
    reasons = [f"near-miss-{k}" for k in near_misses]
    if _capitalised_run(text):
        reasons.append("capitalised-run")
    if _HOUSE_NUMBER.search(text):
        reasons.append("house-number")
    if _STREET_WORD.search(text) or _LOCATION.search(text):
        reasons.append("location-word")
    if _PII_CUE.search(text):
        reasons.append("pii-cue")
    if implicit_rule.quasi_cues(text):
        reasons.append("quasi-cues")  # stage 3 will be wanted; stage 2 runs first, as the cascade is ordered
    return tuple(reasons)


def eligible(span: NerSpan) -> bool:
    """Whether a span's label and size can make it PII at all (before the threshold)."""
    if span.label == PERSON:
        return span.word_count >= 2
    if span.label == ADDRESS:
        return span.word_count >= 3
    return span.label in NER_LABELS


def _verdict(clean: bool, hit: str | None, run: list[str], why: list[str], cat: str | None) -> PiiVerdict:
    return PiiVerdict(clean, None if clean else hit, tuple(run), ";".join(why) or "none", None if clean else cat)


def scan(
    text: str,
    policy: PiiPolicy | None = None,
    ner: NerBackend | None = None,
    classifier: ImplicitClassifier | None = None,
) -> PiiVerdict:
    """Run the cascade over ``text``; see the module docstring for when each stage runs."""
    policy = policy or PiiPolicy()
    always = policy.escalation == "always"
    run = [REGEX]
    why: list[str] = []
    r1 = regex_stage.scan(text, policy.safe_email_domains)
    if r1.hits:
        return _verdict(False, REGEX, run, why, r1.hits[0])

    s2 = ("policy-always",) if always else stage2_reasons(text, r1.near_misses)
    if not s2:
        return _verdict(True, None, run, why, None)
    why.append("s2=" + "+".join(s2))

    s3: list[str] = ["policy-always"] if always else []
    if ner is None:
        s3.append("ner-unavailable")  # stage 2 was wanted: do not let the text through unexamined
    else:
        run.append(NER)
        spans = [s for s in ner.entities(text) if eligible(s)]
        hits = [s for s in spans if s.score >= policy.ner_threshold]
        if hits:
            return _verdict(False, NER, run, why, max(hits, key=lambda s: s.score).label)
        best = max((s.score for s in spans), default=0.0)
        lo, hi = policy.llm_band
        if not always and lo <= best < hi:
            s3.append("ner-band")
    if "quasi-cues" in s2:
        s3.append("quasi-cues")
    if not s3:
        return _verdict(True, None, run, why, None)
    why.append("s3=" + "+".join(s3))

    if classifier is not None:
        run.append(LLM)
        decided = classifier.classify(text)
        if decided is not None:
            # Only known categories leave the cascade: a back-end's free text must not reach metrics or logs.
            cat = decided.category if decided.category in IMPLICIT_CATEGORIES else "implicit"
            return _verdict(not decided.pii, LLM, run, why, cat)
        why.append("llm-undecided")
    run.append(LOCAL_RULE)
    local = implicit_rule.evaluate(text)
    return _verdict(not local.pii, LOCAL_RULE, run, why, local.category or "implicit")
