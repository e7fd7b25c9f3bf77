"""The perceiver's deterministic local fallback (G-07): deductions from an exchange by English patterns.

The LLM back-end is optional and lives elsewhere; this one needs no model, so tests and replays agree.

Rules, sentence by sentence (split after ``.``, ``!``, ``?`` and at line breaks), in input order:

* Questions are never deductions: a sentence ending in ``?`` or starting with a question word or auxiliary.
* From the **response** only episodic sentences are taken: its "I" is the assistant, not the user, and its
  other claims are the model's, not things the user told us.
* **Episodic** (the whole sentence): past problem-solving — "we/I (…) fixed/solved/resolved/debugged/repaired/
  worked around/figured out …", or a dated past account — "on <date>, we …", "yesterday/last week we …".
* Otherwise the **prompt**'s sentence is cut into clauses at ``;`` and before "and/but I|my|we"; after a lead-in
  ("hi,", "also", "remember that", …) each clause is tried against the **fact** patterns, anchored at its start:
  "my name is / I am called / call me X" → ``has_name``; "I am N years old / my age is N" → ``has_age``;
  "I live in / I am based in X" → ``lives_in``; "I work at|for / I am employed by X" → ``works_at``;
  "I use / I am using / I work with X" → ``uses``; "I (really) like|love|prefer|enjoy X" → ``likes``;
  "I am from / I come from X" → ``comes_from``; "I speak X" → ``speaks``. The object runs to the clause end or
  the first ``, ; : (`` or "because/since/which/who/for"; a leading article is dropped; a name keeps at most 4 words.
  A clause with a negation ("I don't use X") or an object over 80 characters is no fact.
* Any other prompt clause of >= 3 words is **semantic** (STM, to be confirmed by the critic): a statement in
  the first person ("I …", "my …", "our …") or about anything else ("The irrigation pump restarts every
  night"). Not statements: requests to the assistant ("I want you to …"), clauses starting with an
  imperative ("please", "tell", "explain", …) and courtesies ("thanks …", "thank you …", "sorry …").

Duplicates (same triple id for facts, same text for others) are told once; at most ``limit`` deductions.
"""

from __future__ import annotations

import re

from governance.clam.nodes import Deduction
from governance.clam.triples import CATEGORY, USER, Triple, canonical_predicate, normalise, triple_id
from governance.sentences import split_sentences

MAX_DEDUCTIONS = 16
MAX_OBJECT_CHARS = 80
_I = re.IGNORECASE

_CLAUSES = re.compile(r"\s*;\s*|,?\s+(?:and|but)\s+(?=(?:i|i'm|i've|my|we)\b)", _I)
_LEAD_IN = re.compile(
    r"^(?:(?:hi|hello|hey|well|so|also|and|but|btw|actually|now|oh|ok|okay|yes|no|by the way|"
    r"remember that|remember|note that|fyi|for the record|just so you know)\b[\s,!:]*)+",
    _I,
)
_QUESTION = re.compile(
    r"^(?:what|who|whom|whose|where|when|why|how|which|do|does|did|can|could|would|should|will|"
    r"shall|is|are|am|was|were|have|has|had)\b",
    _I,
)
NEGATION = re.compile(
    r"\b(?:not|no|never|none|nothing|neither|nor|cannot|no longer|any ?more|stopped|quit|"
    r"used to)\b|n't\b",
    _I,
)
_END = re.compile(r"\s*(?:[,;:(]|\s(?:because|since|which|who|but|so that|for)\b).*$", _I)
_ARTICLE = re.compile(r"^(?:a|an|the)\s+", _I)
_AGE = re.compile(r"^(?:i(?: am|'m) (?P<o>\d{1,3}) years? old|my age is (?P<o2>\d{1,3}))\b", _I)
_FACT_PATTERNS = (
    (r"my name is|my name's|i(?: am|'m) called|i(?: am|'m) named|call me", "has_name"),
    (r"(?:i (?:live|reside)|i(?: am|'m) (?:living|based)) in", "lives_in"),
    (r"i(?: am|'m)? (?:work|working) (?:at|for)|i(?: am|'m) employed (?:by|at)", "works_at"),
    (r"i (?:use|utilise|utilize|work with)|i(?: am|'m) using", "uses"),
    (r"i (?:really )?(?:like|love|prefer|enjoy)", "likes"),
    (r"i(?: am|'m) from|i come from", "comes_from"),
    (r"i speak", "speaks"),
)
_FACTS = tuple((re.compile(rf"^(?:{p})\s+(?P<o>.+)$", _I), predicate) for p, predicate in _FACT_PATTERNS)
_FIRST_PERSON = re.compile(r"^(?:i|i'm|i've|i'd|i'll|my|we|we're|we've|we'd|our)\b", _I)
_REQUEST = re.compile(
    r"^(?:i(?: would|'d) like you|i (?:want|need) you|i wonder|i(?: am|'m) (?:asking|wondering))\b", _I
)
_IMPERATIVES = """please tell explain show give help write make list describe summarise summarize translate find create
generate let check compare fix debug run suggest recommend name define continue try"""
_COURTESIES = "thanks thank sorry bye goodbye cheers congrats congratulations welcome"
_NOT_STATEMENTS = frozenset(_IMPERATIVES.split()) | frozenset(_COURTESIES.split())
_SOLVED = re.compile(
    r"\b(?:we|i)\s+(?:(?!never\b|not\b)\w+\s+){0,2}?"
    r"(?:fixed|solved|resolved|debugged|repaired|worked around|figured out)\b",
    _I,
)
_DATE = (
    r"(?:\d{1,2}(?:st|nd|rd|th)?\s+[a-z]+|[a-z]+\s+\d{1,2}(?:st|nd|rd|th)?|\d{4}-\d{2}-\d{2}|"
    r"\d{1,2}/\d{1,2}(?:/\d{2,4})?|(?:mon|tues|wednes|thurs|fri|satur|sun)day)(?:,?\s+\d{4})?"
)
_DATED = re.compile(rf"^(?:on\s+{_DATE}|yesterday|last\s+(?:week|month|year|time|night))\s*,?\s+(?:we|i)\b", _I)


def sentences(text: str) -> list[str]:
    """Trimmed non-empty sentences, typographic apostrophes made plain (patterns say ``'``)."""
    clean = text.replace("\u2019", "'").replace("\u2018", "'")
    return [" ".join(s.split()) for s in split_sentences(clean) if s.strip()]


def clauses(sentence: str) -> list[str]:
    """A sentence cut at ``;`` and before "and/but I|my|we": one statement each."""
    return [c for c in _CLAUSES.split(sentence) if c.strip()]


def is_question(sentence: str) -> bool:
    s = _LEAD_IN.sub("", sentence.strip())
    return s.endswith("?") or bool(_QUESTION.match(s))


def is_episodic(sentence: str) -> bool:
    s = _LEAD_IN.sub("", sentence.strip())
    return bool(_SOLVED.search(s) or _DATED.match(s))


def fact_description(t: Triple) -> str:
    """A fact as a sentence: ``User lives in Milan`` (the semantic LTM text of a dual-written fact)."""
    n = normalise(t)
    return f"{n.subject} {n.predicate.replace('_', ' ')} {n.object}"


def fact_of(clause: str) -> Triple | None:
    """The fact a first-person clause states (the patterns above), or a fact description read back
    (``User lives in Milan``); None when it states none."""
    s = _LEAD_IN.sub("", clause.strip()).rstrip(".!").strip()
    return _stated(s) or _described(s)


def _stated(s: str) -> Triple | None:
    # a fact pattern at the start of a clause (lead-in already stripped); a negated clause states no fact
    if not s or NEGATION.search(s):
        return None
    age = _AGE.match(s)
    if age:
        return Triple(USER, "has_age", age.group("o") or age.group("o2"))
    for pattern, predicate in _FACTS:
        m = pattern.match(s)
        if m:
            return _triple(predicate, m.group("o"))
    return None


def perceive_local(prompt: str, response: str, limit: int = MAX_DEDUCTIONS) -> list[Deduction]:
    """The module docstring's rules: deterministic, input order, at most ``limit`` deductions."""
    out: list[Deduction] = []
    seen: set[str] = set()

    def add(d: Deduction) -> bool:
        key = triple_id(d.triple) if d.triple is not None else f"{d.kind}\x1f{d.description.casefold()}"
        if key not in seen:
            seen.add(key)
            out.append(d)
        return len(out) >= limit

    for source, text in (("prompt", prompt), ("response", response)):
        for sentence in sentences(text):
            if is_question(sentence):
                continue
            if is_episodic(sentence):
                if add(Deduction("episodic", sentence.rstrip(".!").strip())):
                    return out
                continue
            if source == "response":
                continue
            for clause in clauses(sentence):
                d = _clause_deduction(clause)
                if d is not None and add(d):
                    return out
    return out


def _clause_deduction(clause: str) -> Deduction | None:
    s = _LEAD_IN.sub("", clause.strip()).rstrip(".!").strip()
    if not s or is_question(s):
        return None
    fact = _stated(s)
    if fact is not None:
        return Deduction("fact", fact_description(fact), fact)
    if len(s.split()) < 3 or _REQUEST.match(s):
        return None
    if _FIRST_PERSON.match(s) or s.split()[0].lower().strip(",!") not in _NOT_STATEMENTS:
        return Deduction("semantic", s)
    return None


def _triple(predicate: str, raw: str) -> Triple | None:
    obj = _ARTICLE.sub("", _END.sub("", raw).strip().rstrip(".!").strip(" \"'"))
    if predicate == "has_name":
        obj = " ".join(re.split(r"\s+and\s+", obj, maxsplit=1, flags=_I)[0].split()[:4])
    if not obj or len(obj) > MAX_OBJECT_CHARS:
        return None
    return Triple(USER, predicate, obj)


def _described(s: str) -> Triple | None:
    # the inverse of fact_description for the vocabulary's predicates: "User <predicate words> <object>"
    words = s.split()
    if len(words) < 3 or words[0] != USER:
        return None
    for n in (3, 2, 1):
        if len(words) > n + 1:
            phrase = "_".join(words[1 : n + 1]).lower()
            predicate = canonical_predicate(phrase)
            if predicate in CATEGORY:
                return Triple(USER, predicate, " ".join(words[n + 1 :]))
    return None
