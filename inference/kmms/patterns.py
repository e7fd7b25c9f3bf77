"""The local consolidator's fact patterns: one clause in, ``Hit``s (key, value, fact_type, confidence) out.

Every pattern is a template over a *subject*: the memory's owner (``I``/``we``, ``my``/``our``, ``I'm``) or a
named entity (``John``, ``John's``, ``John is``), so one table serves first-person statements and third-person
statements about an entity. Values that must be names (a city, an employer, a person) are the leading run of
capitalised words of the text after the cue ("Porto with my partner" -> "Porto"); other values are short
phrases cut at a conjunction.

Guards (per clause; a sentence is split at , ; : "but" "because" and "and I/we"; 1,000 characters read): a
question or a sentence opening with if/unless/suppose/imagine gives nothing; so does a negation (not, never,
n't, no longer, anymore, used to) or a hypothetical/future marker (if, might, may, maybe, perhaps, could, would,
should, will, 'd, 'll, going to, plan/want/hope to, considering, thinking about) in the 120 characters before
the value; a hedge ("I think", "I believe", "I guess", "probably") there caps the confidence at 0.70.
Confidence otherwise is the pattern's: 0.85 explicit present-tense statements and explicit changes, 0.80
weaker cues (joined, "my apartment in", skills), 0.75 habits without a preference word, likes and opinions.

A value gets a pattern only with patterns for the usual ways it changes: a fact read from "I drive a Mazda 3"
whose change ("picked up my new car yesterday, a Tesla") is not read stays current and answers wrongly. Measured
on ``hivemem bench memory``: patterns for the car, "go-to" and "main" favourites and "my manager at X" took the
newer-value-first rate of knowledge updates from 64 % to 51 %; they were removed. On 2026-12-05 seven patterns that
spelt out sentences of that benchmark's generator (``bench/memory_corpus.py``) and gave no fact on public
conversations (LoCoMo, REALTALK) were removed too: "the move from X to Y went fine", "signed the lease on a flat in
X", "accepted the offer from X", "left X and joined Y", "gave up X and switched to Y", "moved on to X, it's my new
favourite show", "forget X, I'm obsessed with Y".
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from governance.kmms.values import FactType
from inference.kmms.dates import episode_date, find_date

HEDGED = 0.70
MAX_CLAUSE = 1_000  # characters of one clause that are read (a run-on "sentence" of a document is cut)
CUE_WINDOW = 120  # characters before a match searched for negation / hypothetical / hedge words

_SPLIT_CLAUSE = re.compile(r"\s*[;,:]\s+|\s+(?:but|because|although|though|whereas|while)\s+|"
                           r"\s+and\s+(?=(?:I|we|my|our|he|she)\b)", re.IGNORECASE)  # fmt: skip
_COND_SENTENCE = re.compile(r"^\s*(?:if|unless|suppose|imagine|what if|in case)\b", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|never|no longer|no|nor|neither|cannot|anymore|any more|used to|formerly|"
                       r"previously)\b|n['’]t\b", re.IGNORECASE)  # fmt: skip
_HYPOTHETICAL = re.compile(r"\b(?:if|unless|whether|might|maybe|perhaps|could|would|should|shall|going to|gonna|"
                           r"about to|plans? to|planning to|planning on|wants? to|wanted to|hope to|hoping to|wish|"
                           r"considering|thinking about|thinking of|intend to|someday|one day|dream of|dreaming of)\b|"
                           r"['’](?:d|ll)\b|(?-i:\bwill\b)|(?<!in )(?<!last )(?<!of )(?<!since )(?-i:\bmay\b)(?! \d)",
                           re.IGNORECASE)  # fmt: skip
_HEDGE = re.compile(r"\b(?:I think|I believe|I guess|I suppose|I reckon|probably|apparently|I'm pretty sure)\b",
                    re.IGNORECASE)  # fmt: skip
CHANGE = re.compile(r"\b(?:moved|relocated|(?:the|my|our) move|switched|changed|now|no longer|new|anymore|"
                    r"these days|nowadays|since|as of|started|joined|promoted|became|left|quit|recently|finally)\b",
                    re.IGNORECASE)  # fmt: skip


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_CONNECTORS = _set("of de da do del la le van von and & the for")
_NOT_NAME = _set("i he she it they we you this that there last next yesterday today tonight monday tuesday wednesday "
                 "thursday friday saturday sunday january february march april may june july august september "
                 "october november december")  # fmt: skip
_STOP = _set("because since but although though so which who whom whose when while if unless as than and or then "
             "that where until after before instead rather")  # fmt: skip
_DETERMINERS = _set("a an the my our your his her their this that these those some")
_PRONOUNS = _set("it that this them him her you me us something anything everything what how")

JOB_HEAD = (r"(?:[\w-]+ ){0,3}?(?:engineer|developer|programmer|manager|designer|teacher|nurse|doctor|physician|"
            r"analyst|scientist|consultant|lawyer|attorney|accountant|architect|researcher|professor|lecturer|student|"
            r"writer|editor|journalist|lead|director|officer|intern|administrator|specialist|technician|coordinator|"
            r"chef|pharmacist|dentist|therapist|founder|co-founder|cto|ceo|cfo|coo|vp|pilot|mechanic|electrician|"
            r"recruiter|product owner|scrum master|sre|head of [\w-]+)s?")  # fmt: skip
_SINGLE_ROLES = {"partner": "partner", "wife": "wife", "husband": "husband", "spouse": "spouse",
                 "boyfriend": "boyfriend", "girlfriend": "girlfriend", "fiance": "fiance", "fiancé": "fiance",
                 "fiancée": "fiance", "manager": "manager", "boss": "manager", "mentor": "mentor", "mother": "mother",
                 "mom": "mother", "mum": "mother", "father": "father", "dad": "father"}  # fmt: skip
_MULTI_ROLES = {"sister": "sister", "brother": "brother", "son": "son", "daughter": "daughter", "friend": "friend",
                "colleague": "colleague", "coworker": "colleague", "cousin": "cousin", "aunt": "aunt", "uncle": "uncle",
                "roommate": "roommate", "grandmother": "grandmother", "grandfather": "grandfather",
                "niece": "niece", "nephew": "nephew"}  # fmt: skip
_ROLES = "|".join(sorted({*_SINGLE_ROLES, *_MULTI_ROLES}, key=len, reverse=True))
_SPECIES = {"dog": "dog", "puppy": "dog", "cat": "cat", "kitten": "cat", "rabbit": "rabbit", "hamster": "hamster",
            "parrot": "parrot", "bird": "bird", "horse": "horse", "turtle": "turtle", "fish": "fish"}  # fmt: skip
_CATEGORY = {w: cat for cat, words in {
    "language": "python rust java javascript typescript golang scala kotlin swift ruby php julia haskell elixir "
                "c++ c# sql r go",
    "database": "duckdb postgres postgresql mysql sqlite snowflake bigquery mongodb redis clickhouse oracle",
    "editor": "vim neovim emacs vscode pycharm intellij",
    "os": "linux macos windows ubuntu",
    "cloud": "aws gcp azure",
    "drink": "tea coffee espresso beer wine water juice latte cappuccino",
    "work_mode": "remote remotely hybrid office",
    "transport": "bike car train bus cycling walking",
    "framework": "react vue angular django flask fastapi spark pandas polars",
}.items() for w in words.split()}  # fmt: skip
_SPEAKABLE = _set("english portuguese spanish french german italian dutch mandarin chinese japanese korean hindi "
                  "arabic russian polish swedish greek turkish")  # fmt: skip
_QUALIFIER = re.compile(r"\b(?:for|at|on|during|when)\s+(?:the\s+)?[a-z][\w-]*(?:\s+[a-z][\w-]*){0,3}")
_SPLIT_PREF = re.compile(r"\s+(?:over|rather than|instead of|to|than)\s+\S+(?:\s+\S+)??(?=\s+(?:for|at|on|during|"
                         r"when)\b|$)", re.IGNORECASE)  # fmt: skip


@dataclass(frozen=True)
class Hit:
    key: str
    value: str
    fact_type: FactType
    confidence: float
    change: bool  # the clause carries a change cue (moved, switched, now, new, ...)
    replaces: str | None = None  # the value the clause says was left ("switched from Python to Go")


@dataclass(frozen=True)
class Subject:
    """How a pattern's subject is spelled: the owner (``Subject.user()``) or a named entity."""

    s: str
    be: str
    have: str
    poss: str

    @staticmethod
    def user() -> Subject:
        return Subject(r"\b(?:I|we)", r"\b(?:I am|I['’]m|im|we are|we['’]re)", r"\b(?:I have|I['’]ve|we have|we['’]ve)",
                       r"\b(?:my|our)")  # fmt: skip

    @staticmethod
    def entity(name: str) -> Subject:
        forms = [re.escape(name)] + ([re.escape(name.split()[0])] if " " in name else [])
        s = r"\b(?:" + "|".join(forms) + r")"
        return Subject(s, s + " is", s + " has", s + "['’]s")


# --- value helpers -----------------------------------------------------------------------------------------
def proper(text: str, max_words: int = 5) -> str | None:
    """The leading run of capitalised words ("Porto with my partner" -> "Porto"), possessive stripped."""
    words = text.split()
    out: list[str] = []
    for i, raw in enumerate(words):
        w = raw.strip("\"'()“”")
        if not w:
            break
        lower = w.lower().rstrip(".")
        nxt = words[i + 1].strip("\"'()") if i + 1 < len(words) else ""
        name_word = (w[0].isupper() or (w[0].isdigit() and out)) and w != "I" and (not out or lower not in _NOT_NAME)
        if not name_word and not (out and lower in _CONNECTORS and nxt[:1].isupper() and nxt != "I"):
            break
        out.append(w)
        if len(out) >= max_words or raw.endswith((".", ")")):
            break
    name = re.sub(r"['’]s$", "", " ".join(out)).rstrip(".")
    return name if name and name.lower() not in _NOT_NAME else None


def phrase(text: str, max_words: int = 5, keep_article: bool = False) -> str | None:
    """A short phrase: words up to a conjunction, at most ``max_words``; None for a bare pronoun."""
    out: list[str] = []
    for w in text.split():
        if w.lower() in _STOP or len(out) >= max_words:
            break
        out.append(w)
    while out and not keep_article and out[0].lower() in _DETERMINERS:
        out.pop(0)
    value = " ".join(out).strip(" .\"'")
    return value if value and value.lower() not in _PRONOUNS and value.lower() not in _DETERMINERS else None


def slug(text: str, max_len: int = 40) -> str:
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()  # "café" -> "cafe", not "caf"
    words = [w for w in re.findall(r"[a-z0-9]+", plain.lower().replace("+", "p").replace("#", "sharp"))
             if w not in _DETERMINERS]  # fmt: skip
    s = "_".join(words)[:max_len].strip("_")
    return s if s[:1].isalpha() else ("x_" + s if s else "")


def split_preference(text: str) -> tuple[str, str | None] | None:
    """The main value and its qualifier: "Python over Java for data pipelines" -> ("Python", "for data pipelines")."""
    text = _SPLIT_PREF.sub("", text.strip())
    if text.lower().startswith("to "):
        text = text[3:]
    q = _QUALIFIER.search(text)
    main = phrase(text[: q.start()] if q else text, 4)
    if main is None:
        return None
    qual = phrase(q.group(), 5) if q else None
    return main, qual


def qualifiers(text: str) -> frozenset[str]:
    return frozenset(" ".join(q.split()) for q in _QUALIFIER.findall(text.lower()))


def pref_key(main: str, fallback: str | None = None) -> str:
    for w in [main.lower(), *main.lower().split(), *(fallback or "").lower().split()]:
        if w in _CATEGORY:
            return "preferred_" + _CATEGORY[w]
    return "preferred_" + slug(main)


def is_tech_word(text: str) -> bool:
    return text.lower() in _CATEGORY and _CATEGORY[text.lower()] in ("language", "database", "framework", "cloud")


# --- builders: match -> [(key, value)] ---------------------------------------------------------------------
Builder = Callable[[re.Match[str], int], list[tuple[str, str]]]


def _named(key: str, tech_ok: bool = True) -> Builder:
    def build(m: re.Match[str], ref_ms: int) -> list[tuple[str, str]]:
        v = proper(m.group("v"))
        return [] if v is None or (not tech_ok and is_tech_word(v)) else [(key, v)]

    return build


def _title(m: re.Match[str], ref_ms: int) -> list[tuple[str, str]]:
    v = phrase(m.group("v"), 6)
    return [("job_title", v.lower())] if v else []


def _preference(m: re.Match[str], ref_ms: int) -> list[tuple[str, str]]:
    found = split_preference(m.group("v"))
    if found is None:
        return []
    main, qual = found
    old = m.groupdict().get("old")
    verb = (m.groupdict().get("verb") or "").lower()
    if verb == "moved" and not (is_tech_word(main) or (old and is_tech_word(old.strip()))):
        return []  # "we moved from Lisbon to Porto" is residence, not a preference
    return [(pref_key(main, old), f"{main} {qual}" if qual else main)]


_HABITUAL = re.compile(r"\b(?:always|mostly|usually|generally|mainly|now)\b", re.IGNORECASE)


def _habit(m: re.Match[str], ref_ms: int) -> list[tuple[str, str]]:
    found = split_preference(m.group("v"))
    if found is None or (found[1] is None and not _HABITUAL.search(m.group(0))):
        return []  # "I use Slack" is not a preference; "I always use X" / "I use X for Y" is
    return _preference(m, ref_ms)


# "my favourite show at the moment is X": the key is the show's, whatever the moment.
_NOWADAYS = re.compile(r"\s+(?:at the moment|right now|these days|nowadays|now|currently|lately|for now|at present)"
                       r"\s*$", re.IGNORECASE)  # fmt: skip


def _favourite(m: re.Match[str], ref_ms: int) -> list[tuple[str, str]]:
    v, k = phrase(m.group("v"), 6), slug(_NOWADAYS.sub("", m.group("k")), 30)
    return [("favourite_" + k, v)] if v and k else []


def _likes(m: re.Match[str], ref_ms: int) -> list[tuple[str, str]]:
    v = phrase(re.sub(r"^\s*to ", "", m.group("v")), 4)
    verb = m.group("verb").lower()
    verb = verb if verb.endswith("s") else verb + "s"
    return [("likes_" + slug(v, 30), f"{verb} {v}")] if v and slug(v) else []


def _relation(m: re.Match[str], ref_ms: int) -> list[tuple[str, str]]:
    name, role = proper(m.group("v"), 3), m.group("role").lower()
    if name is None:
        return []
    key = _SINGLE_ROLES.get(role) or f"{_MULTI_ROLES[role]}_{slug(name, 30)}"
    return [(key, name)]


def _pet(m: re.Match[str], ref_ms: int) -> list[tuple[str, str]]:
    name = proper(m.group("v"), 3)
    return [("pet_" + _SPECIES[m.group("species").lower()], name)] if name else []


def _learning(m: re.Match[str], ref_ms: int) -> list[tuple[str, str]]:
    v = proper(m.group("v"), 3) or phrase(re.sub(r"^(?:how )?to ", "", m.group("v")), 3)
    return [("learning_" + slug(v, 30), v)] if v and slug(v) else []


def _skill(m: re.Match[str], ref_ms: int) -> list[tuple[str, str]]:
    v = proper(m.group("v"), 3) or phrase(m.group("v"), 3)
    if v is None or not slug(v):
        return []
    verb = (m.groupdict().get("verb") or "").lower()
    if verb.startswith("know") and not is_tech_word(v) and v.lower() not in _CATEGORY:
        return []  # "I know John" is not a skill
    if verb.startswith("speak") and v.lower() not in _SPEAKABLE:
        return []
    return [("skill_" + slug(v, 30), v)]


_DATE_TAIL = re.compile(r"\s+(?:(?:last|yesterday|today|tonight|this|in|on|at|during|with|for|and|but|when|after|"
                        r"before|since)\b|(?:\d+|a|an|one|two|three) \w+ ago\b).*$", re.IGNORECASE)  # fmt: skip


def _event(m: re.Match[str], ref_ms: int) -> list[tuple[str, str]]:
    verb = " ".join(m.group("verb").lower().split())
    obj = _DATE_TAIL.sub("", " " + (m.group("obj") or "")).strip()
    obj = (phrase(obj, 5, keep_article=True) or "") if obj else ""
    when = find_date(m.string, ref_ms) or episode_date(ref_ms)
    key = "event_" + slug(f"{verb} {obj}", 40)
    return [(key, f"{verb} {obj} ({when})".replace("  ", " "))]


def _opinion(m: re.Match[str], ref_ms: int) -> list[tuple[str, str]]:
    about, v = slug(m.group("x"), 40), phrase(m.group("v"), 6)
    return [("opinion_" + about, v)] if about and v else []


# --- the table ---------------------------------------------------------------------------------------------
_A = (r"(?:(?: (?:now|currently|still|just|recently|finally|actually|also|really|always|mostly|usually|"
      r"generally|mainly|definitely|officially|absolutely|totally|honestly|both|all|even))*)")  # fmt: skip
_V = r"(?P<v>[^,;:!?]{1,80})"
_AN = r"(?:a |an |the )?"
_PERF = r"(?: have| has|['’]ve)?"  # "I have joined", "I've joined", "I joined": one spelling for every pattern


@dataclass(frozen=True)
class Pattern:
    name: str
    template: str  # {S} {BE} {HAVE} {P} {OWN} subject placeholders, {A} adverbs, {PERF} an optional have/'ve,
    # {V} the value, {AN} an article
    fact_type: FactType
    confidence: float
    build: Builder


PATTERNS: tuple[Pattern, ...] = (
    Pattern("residence", r"{S}{A} (?:live|lives|reside|resides) in {V}", "attribute", 0.85, _named("residence", False)),
    Pattern("residence_be", r"{BE}{A} (?:living|based|settled) in {V}", "attribute", 0.85, _named("residence", False)),
    Pattern("residence_move", r"{S}{A}{PERF} (?:just |recently |finally )?(?:moved|relocated)"
            r"(?: back)?(?: from [^,;]+?)? to {V}", "attribute", 0.85, _named("residence", False)),
    Pattern("residence_home", r"{P} (?:new )?(?:apartment|flat|house|home|place) (?:is )?in {V}", "attribute", 0.80,
            _named("residence", False)),
    Pattern("employer", r"(?:{S}{A} (?:work|works)|{BE}{A} working) (?:at|for) {V}", "attribute", 0.85,
            _named("employer")),
    Pattern("employer_join", r"{S}{A}{PERF} (?:joined|started at|started working (?:at|for)|"
            r"got a (?:new )?job (?:at|with)|got hired (?:at|by)|was hired by|were hired by) {V}", "attribute", 0.80,
            _named("employer")),
    Pattern("employer_be", r"{BE}{A} (?:employed (?:at|by)|{AN}" + JOB_HEAD + r" (?:at|for|with)) {V}", "attribute",
            0.80, _named("employer")),
    Pattern("employer_new_job", r"{S}{A}{PERF} (?:started|began|begun) (?:{P} |a |the )?(?:new )?"
            r"(?:job|role|position) (?:at|with) {V}", "attribute", 0.85, _named("employer")),
    Pattern("job_title", r"{BE}{A} {AN}(?P<v>" + JOB_HEAD + r")\b", "attribute", 0.85, _title),
    Pattern("job_promoted", r"{S}{A} (?:was|were|got|have been|has been|['’]ve been) promoted to {AN}{V}",
            "attribute", 0.85, _title),
    Pattern("job_role", r"{P} (?:new )?(?:role|job title|title|position|job) is {AN}(?P<v>" + JOB_HEAD + r")\b",
            "attribute", 0.85, _title),
    Pattern("job_as", r"{S}{A} (?:work|works|started|joined|started working)[^,;]{0,40}? as {AN}(?P<v>" + JOB_HEAD
            + r")\b", "attribute", 0.85, _title),
    Pattern("prefer", r"{S}{A} (?:prefer|prefers) {V}", "preference", 0.85, _preference),
    Pattern("habit_always", r"{S}{A} (?:always|mostly|usually|generally|mainly)(?: \w+ly)? (?:use|uses) {V}",
            "preference", 0.85, _preference),
    Pattern("habit", r"{S}{A} (?:use|uses) {V}", "preference", 0.75, _habit),
    Pattern("switch", r"{S}{A}{PERF} (?P<verb>switched|migrated|changed|moved) from "
            r"(?P<old>[^,;]+?) to {V}", "preference", 0.85, _preference),
    Pattern("favourite", r"{P} (?:new |all-time )?(?:favourite|favorite|fav) (?P<k>[\w -]{1,30}?) (?:is|are) {V}",
            "preference", 0.85, _favourite),
    Pattern("favourite_inv", r"^(?P<v>[\w'’ -]{1,40}?) (?:is|are) {P} (?:new |all-time )?(?:favourite|favorite) "
            r"(?P<k>[\w -]{1,30})", "preference", 0.85, _favourite),
    Pattern("likes", r"{S}{A} (?P<verb>love|loves|like|likes|enjoy|enjoys|hate|hates|dislike|dislikes|adore|adores) "
            r"{V}", "preference", 0.75, _likes),
    Pattern("relation", r"{P} (?:new |younger |older |little |big |best )?(?P<role>" + _ROLES + r")(?: is| , |, | )"
            r"(?: named | called )?{V}", "relationship", 0.85, _relation),
    Pattern("relation_inv", r"(?P<v>\b[A-Z][\w'’-]*(?: [A-Z][\w'’-]*){0,2}) is {P} (?:new )?(?P<role>" + _ROLES
            + r")\b", "relationship", 0.85, _relation),
    Pattern("pet", r"{P} (?P<species>" + "|".join(_SPECIES) + r")(?:['’]s name is| named| called| is called| is)? "
            r"{V}", "relationship", 0.85, _pet),
    Pattern("pet_have", r"{HAVE}{A} (?:got )?(?:a|an|one) (?P<species>" + "|".join(_SPECIES) + r") (?:named|called) "
            r"{V}", "relationship", 0.85, _pet),
    Pattern("learning", r"{BE}{A} (?:learning|studying|taking (?:a )?(?:course|class) (?:in|on)) {V}", "skill", 0.80,
            _learning),
    Pattern("skill", r"{S}{A} (?P<verb>know|knows|speak|speaks|can code in|can program in|can write) {V}", "skill",
            0.80, _skill),
    Pattern("skill_be", r"{BE}{A} (?:fluent|proficient|experienced|an expert|good|skilled) (?:in|at|with) {V}",
            "skill", 0.80, _skill),
    Pattern("event", r"{S}{A} (?P<verb>ran|completed|finished|attended|visited|graduated from|got married|"
            r"got engaged|got divorced|bought|adopted|won|climbed|hiked|travell?ed to|flew to|launched|shipped|passed|"
            r"had a baby)\b(?P<obj>[^,;:!?]{0,60})", "event", 0.85, _event),
    Pattern("opinion", r"{S}{A} (?:think|thinks|believe|believes|feel|feels|said|says|reckon|reckons)(?: that)? "
            r"(?!I\b|we\b)(?P<x>[\w'’ -]{1,40}?) (?:is|are|was|will be|seems|looks|sounds) {V}", "other", 0.75,
            _opinion),
)  # fmt: skip


@lru_cache(maxsize=512)
def compiled(subject: Subject) -> tuple[tuple[re.Pattern[str], Pattern], ...]:
    out = []
    for p in PATTERNS:
        own = r"\b(?:my|our|the)" if subject == Subject.user() else subject.poss
        src = (p.template.replace("{OWN}", own).replace("{S}", subject.s).replace("{BE}", subject.be)
               .replace("{HAVE}", subject.have).replace("{P}", subject.poss).replace("{A}", _A)
               .replace("{PERF}", _PERF).replace("{V}", _V).replace("{AN}", _AN))  # fmt: skip
        flags = 0 if p.name == "relation_inv" else re.IGNORECASE
        out.append((re.compile(src, flags), p))
    return tuple(out)


def facts_in(sentence: str, subject: Subject, ref_ms: int) -> list[Hit]:
    """The facts one sentence states about ``subject`` (guards in the module doc)."""
    body = sentence.strip().rstrip(".!")
    if not body or body.endswith("?") or _COND_SENTENCE.match(body):
        return []
    hits: list[Hit] = []
    seen: set[tuple[str, str]] = set()
    for text in (c[:MAX_CLAUSE] for c in _SPLIT_CLAUSE.split(body)):
        change = CHANGE.search(text) is not None
        for rx, p in compiled(subject):
            for m in rx.finditer(text):
                # the words just before the value: where a negation, hypothetical or hedge would be
                cue = text[max(0, m.start() - CUE_WINDOW) : m.start("v") if "v" in rx.groupindex else m.end()]
                if _NEGATION.search(cue) or _HYPOTHETICAL.search(cue):
                    continue
                conf = min(p.confidence, HEDGED) if _HEDGE.search(cue) else p.confidence
                for key, value in p.build(m, ref_ms):
                    if _NEGATION.search(value) or (key, value) in seen or not re.fullmatch(r"[a-z][a-z0-9_]*", key):
                        continue
                    seen.add((key, value))
                    left = m.groupdict().get("old")
                    hits.append(Hit(key, value[:500], p.fact_type, conf, change, _DATE_TAIL.sub("", left).strip()
                                    if left else None))  # fmt: skip
    return hits
