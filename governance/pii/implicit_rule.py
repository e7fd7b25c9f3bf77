"""The local stage-3 rule: a deterministic stand-in for the LLM classifier (seed 000, §7.1, C-19), used when
no LLM is configured or when the LLM gave no usable answer.

It flags implicit PII, text that names nobody but points at one person:
- ``health_individual``: a singular reference to a person ("the patient who", "a customer whose", "one of
  our employees") together with a health term;
- ``indirect_reference``: such a reference together with a location ("the user in Mumbai who ...");
- ``quasi_identifier``: such a reference with two of {age, gender, ethnicity/religion/nationality, personal
  circumstance}, or three of {age, gender, location, ethnicity/..., personal circumstance} without one
  ("a 34-year-old woman from Pune").
It allows what the seed allows: organisation names, generic roles without personal attributes ("the approver
must sign"), aggregate statistics (plural subjects, percentages) and technical patterns.

``quasi_cues`` is the cheaper test the cascade uses to decide whether to escalate to stage 3 at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from governance.pii.backends import HEALTH_INDIVIDUAL, INDIRECT_REFERENCE, QUASI_IDENTIFIER, ImplicitVerdict

_PEOPLE = (
    r"user|customer|client|patient|employee|member|applicant|driver|tenant|student|claimant|borrower|"
    r"policyholder|policy holder|caller|account holder|cardholder|subscriber|woman|man|girl|boy|lady|gentleman|"
    r"person|individual|resident|traveller|traveler|passenger|contractor|nurse|teacher|worker|colleague|"
    r"neighbou?r|teenager|child|kid|mother|father|wife|husband|son|daughter|retiree|pensioner|widow|widower|"
    r"candidate|intern|trainee|guest|buyer|seller|landlord|investor|donor|volunteer|shopper|visitor|vendor rep|"
    r"engineer|developer|analyst|accountant|lawyer|clerk|officer|agent|executive|director|technician|pharmacist|"
    r"physician|surgeon|pilot|cashier|courier|cleaner|guard|receptionist|consultant|partner|associate"
)
# "the user interface", "customer support": the person noun as a modifier names no one.
_COMPOUND = (
    r"'s\s+(?:base|segment)|\s+(?:interface|table|ids?|base|accounts?|journeys?|flows?|experience|stor(?:y|ies)|"
    r"guide|manual|agreement|data|records?|groups?|roles?|permissions?|sessions?|names?|segments?|portal|list|"
    r"count|research|feedback|onboarding|profiles?|settings|support|service|success|care|master|type|tier|"
    r"satisfaction|churn|retention|acquisition|side|level|facing|management|ledger|queue|operator|bank|network|"
    r"organi[sz]ation|company|firm|app|system|platform|number|code|portal|pool|database|registry)\b"
)
# A singular person: determiner + (up to two words) + person noun, not followed by a plural/collective use.
_INDIVIDUAL = re.compile(
    rf"\b(?:the|a|an|this|that|one|our|my|their|his|her|same)\s+(?:[\w-]+\s+){{0,2}}?(?:{_PEOPLE})\b(?!s\b|{_COMPOUND})"
    rf"|\bone of (?:our|the|their|my) (?:[\w-]+\s+)?(?:{_PEOPLE})s\b"
    rf"|\b(?:{_PEOPLE}) (?:who|whose|whom)\b",
    re.IGNORECASE,
)
_RELATIVE = re.compile(r"\b(?:who|whose|whom)\b", re.IGNORECASE)

_HEALTH = re.compile(
    r"\b(?:diagnos\w*|diabet\w*|cancer|tumou?r|chemo\w*|hiv|aids|hepatitis|tuberculosis|depress\w*|anxiety|"
    r"bipolar|schizophreni\w*|adhd|autis\w*|dementia|alzheimer\w*|parkinson\w*|epilep\w*|asthma|stroke|"
    r"heart attack|cardiac|pregnan\w*|miscarri\w*|ivf|surgery|operated on|dialysis|disabilit\w*|disabled|"
    r"wheelchair|mental health|psychiatr\w*|therap(?:y|ist)|rehab\w*|addict\w*|overdose|hospitali[sz]ed|"
    r"admitted to|prescri\w*|medication|insulin|illness|terminal|tested positive|infected|std|sti|"
    r"blood pressure|hypertension|transplant|covid)\b",
    re.IGNORECASE,
)
_AGE = re.compile(
    r"\b\d{1,3}[- ]?(?:year|yr)s?[- ]old\b|\baged? \d{1,3}\b|\bin (?:his|her|their) (?:early |mid|mid-|late )?"
    r"(?:\d0s|twenties|thirties|forties|fifties|sixties|seventies|eighties)\b|\bborn in \d{4}\b|"
    r"\b(?:teenage|elderly|octogenarian|septuagenarian)\b",
    re.IGNORECASE,
)
_GENDER = re.compile(
    r"\b(?:male|female|woman|man|lady|gentleman|girl|boy|transgender|trans|non-binary|nonbinary|mother|father|"
    r"wife|husband|widow|widower|she|he|her|his)\b",
    re.IGNORECASE,
)
_GROUP = re.compile(
    r"\b(?:hindu|muslim|christian|sikh|jain|buddhist|jewish|parsi|dalit|brahmin|adivasi|tamil|bengali|gujarati|"
    r"punjabi|marathi|kashmiri|nigerian|pakistani|bangladeshi|syrian|afghan|refugee|immigrant|migrant|"
    r"asylum seeker|black|hispanic|latino|latina|gay|lesbian|bisexual|queer)\b",
    re.IGNORECASE,
)
_PERSONAL = re.compile(
    r"\b(?:divorc\w*|separated from|widowed|single (?:mother|father|parent)|salary|earns|income|debt|bankrupt\w*|"
    r"defaulted|arrested|convicted|criminal record|jail|prison|visa status|undocumented|religion|affair|"
    r"fired|dismissed|laid off|disciplinary|lives (?:in|at|near|with|alone)|home address|his home|her home|"
    r"family|children|kids|unemployed|homeless|evicted)\b",
    re.IGNORECASE,
)
LOCATION_WORDS = (
    "mumbai|delhi|new delhi|bangalore|bengaluru|pune|chennai|hyderabad|kolkata|ahmedabad|jaipur|lucknow|surat|"
    "kanpur|nagpur|indore|bhopal|patna|kochi|goa|noida|gurgaon|gurugram|thane|vadodara|coimbatore|mysore|"
    "chandigarh|london|manchester|birmingham|leeds|glasgow|edinburgh|dublin|paris|berlin|munich|madrid|"
    "amsterdam|rome|milan|zurich|vienna|stockholm|new york|brooklyn|boston|chicago|seattle|austin|dallas|houston|"
    "denver|atlanta|miami|san francisco|los angeles|toronto|vancouver|sydney|melbourne|singapore|dubai|"
    "nairobi|lagos|johannesburg|cairo|tokyo|seoul|manila|jakarta|karachi|lahore|dhaka|colombo|kathmandu|"
    "kerala|maharashtra|karnataka|gujarat|punjab|bihar|texas|california|ohio|florida|bavaria|yorkshire"
)
_LOCATION = re.compile(
    rf"\b(?:{LOCATION_WORDS})\b|\b(?:village|town|suburb|neighbou?rhood|district|locality|apartment block|"
    r"housing society|colony|pin ?code|zip ?code|postcode)\b",
    re.IGNORECASE,
)
# "the user in Pune who": a capitalised place name right after a preposition also counts as a location.
_PLACE_AFTER_PREP = re.compile(r"\b(?:in|from|at|near|of)\s+[A-Z][a-z]{2,}(?:\s+[A-Z][a-z]{2,})?\b")
_NOT_PLACES = frozenset({
    "Q1", "Q2", "Q3", "Q4", "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
    "Sunday", "English", "Hindi", "Excel", "Jira", "Slack", "SAP", "Salesforce", "Finance", "Legal", "Operations",
    "Compliance", "Production", "Staging", "The", "This", "That", "Our", "Their"
})  # fmt: skip
_AGGREGATE = re.compile(
    r"\b\d+(?:\.\d+)?\s?%|\bpercent\b|\bper cent\b|\bon average\b|\bmedian\b|\bmajority\b|\bmost (?:of )?\w+s\b|"
    r"\bcohort\b|\bsegment\b|\b\d[\d,]* (?:\w+ )?(?:users|customers|patients|employees|members|people|cases)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Attributes:
    """Which kinds of personal detail a text contains (no text, only flags)."""

    individual: bool
    health: bool
    location: bool
    age: bool
    gender: bool
    group: bool
    personal: bool
    aggregate: bool


def _has_location(text: str) -> bool:
    if _LOCATION.search(text):
        return True
    return any(m.group().split()[1] not in _NOT_PLACES for m in _PLACE_AFTER_PREP.finditer(text))


def attributes(text: str) -> Attributes:
    individual = _INDIVIDUAL.search(text) is not None
    return Attributes(
        individual=individual,
        health=_HEALTH.search(text) is not None,
        location=_has_location(text),
        age=_AGE.search(text) is not None,
        gender=_GENDER.search(text) is not None,
        group=_GROUP.search(text) is not None,
        personal=_PERSONAL.search(text) is not None,
        aggregate=_AGGREGATE.search(text) is not None,
    )


def quasi_cues(text: str) -> bool:
    """Location + demographic/health term, or a singular person with a health term: worth stage 3."""
    a = attributes(text)
    demographic = a.age or a.group or (a.gender and a.individual)
    return (a.location and (demographic or a.health or a.individual)) or (a.individual and (a.health or a.age))


_SENTENCE = re.compile(r"(?<=[.!?;])\s+")


def _about_individuals(text: str) -> list[Attributes]:
    """The attributes of each sentence that is about individuals.

    A sentence is about a population when it has an aggregate cue (a percentage, "on average", "40 users")
    and no singular reference with a relative clause; it is left out, so that "18% of runs failed" in one
    sentence does not excuse "one of our employees was diagnosed with ..." in the next.
    """
    out = []
    for sentence in _SENTENCE.split(text):
        a = attributes(sentence)
        if not a.aggregate or (a.individual and _RELATIVE.search(sentence) is not None):
            out.append(a)
    return out


def evaluate(text: str) -> ImplicitVerdict:
    """The local rule's decision on ``text``. A person and their health or location must share a sentence;
    quasi-identifying traits add up over the whole text."""
    sentences = _about_individuals(text)
    if any(a.individual and a.health for a in sentences):
        return ImplicitVerdict(True, HEALTH_INDIVIDUAL, 0.8)
    if any(a.individual and a.location for a in sentences):
        return ImplicitVerdict(True, INDIRECT_REFERENCE, 0.75)
    individual, location = any(a.individual for a in sentences), any(a.location for a in sentences)
    traits = sum(any(getattr(a, t) for a in sentences) for t in ("age", "gender", "group", "personal"))
    if (individual and traits >= 2) or traits + location >= 3:
        return ImplicitVerdict(True, QUASI_IDENTIFIER, 0.7)
    return ImplicitVerdict(False, None, 0.6)
