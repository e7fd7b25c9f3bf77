"""The plain retrieval baseline of ``hivemem bench memory``, computed in the same run on the same units.

For each memory (a bench user), every session is cut into HiveMem's own units (``governance.kmms.units.units_of``
on the session's messages: a conversation's rounds, a user turn with the replies after it, long ones cut into
pieces), each unit's text without its ``role:`` prefixes. Then, for a question asked at ``asOf``, over the
sessions with ``occurred_at <= asOf`` only:

* **vector**: the unit's vector by the embedder HiveMem uses (``inference.embeddings.embedder_from_env``: the
  bundled all-MiniLM-L6-v2 unless ``HIVEMEM_EMBEDDINGS_URL`` names another), one vector per unit (no sentence
  vectors, voices, statement form or feedback); a session scores the best cosine of the question's vector with its
  units' vectors;
* **BM25**: ``rank_bm25.BM25Okapi`` (k1 1.5, b 0.75, its defaults) over the memory's units, tokens = lower-cased
  runs of letters and digits with NLTK's English stop words (``STOP_WORDS``) removed; a session scores its units' best
  BM25; a session with no question word (best 0) is not in the BM25 ranking. The BM25 statistics are the whole
  memory's (on LoCoMo every question is asked after the last session anyway);
* **fused**: reciprocal-rank fusion of the two session rankings, k = 60, equal weights: a session scores
  ``1 / (60 + rank)`` summed over the rankings that hold it (ranks from 1).

Ties go to the earlier session (time, then the corpus' order); a fused tie to the better vector rank. Each ranking
becomes a ``Retrieval`` of one L4 hit per session, scored by ``bench.memory_metrics`` like HiveMem's. A session sent
as several episodes (a corpus ``Session`` each, one session id: a client that posts each turn as it comes) is one
session here too: its units are all its episodes', those up to ``asOf``.

With ``--ask`` the baseline also answers each question (``MemoryIndex.answer``): the text of the unit first by the
same fusion over units instead of sessions, which ``bench.memory_answers`` scores beside ``ask``'s answer.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from bench.memory_corpus import Corpus, Session, parse_iso
from bench.memory_metrics import RankedHit, Retrieval
from bench.vector_cache import VectorCache

RRF_K = 60
KEEP = 50  # sessions kept per ranking (recall@10 and NDCG@10 read the first 10)
SYSTEMS = {"fused": "baseline RRF", "vector": "baseline vector", "bm25": "baseline BM25"}
# NLTK's English stop words, a contraction as the tokens below cut it ("don't" -> "don", "t")
STOP_WORDS = frozenset((
    "i", "me", "my", "myself", "we", "our", "ours", "ourselves", "you", "your", "yours", "yourself", "yourselves",
    "he", "him", "his", "himself", "she", "her", "hers", "herself", "it", "its", "itself", "they", "them", "their",
    "theirs", "themselves", "what", "which", "who", "whom", "this", "that", "these", "those", "am", "is", "are",
    "was", "were", "be", "been", "being", "have", "has", "had", "having", "do", "does", "did", "doing", "a", "an",
    "the", "and", "but", "if", "or", "because", "as", "until", "while", "of", "at", "by", "for", "with", "about",
    "against", "between", "into", "through", "during", "before", "after", "above", "below", "to", "from", "up",
    "down", "in", "out", "on", "off", "over", "under", "again", "further", "then", "once", "here", "there", "when",
    "where", "why", "how", "all", "any", "both", "each", "few", "more", "most", "other", "some", "such", "no", "nor",
    "not", "only", "own", "same", "so", "than", "too", "very", "s", "t", "can", "will", "just", "don", "should",
    "now", "d", "ll", "m", "o", "re", "ve", "y", "ain", "aren", "couldn", "didn", "doesn", "hadn", "hasn", "haven",
    "isn", "ma", "mightn", "mustn", "needn", "shan", "shouldn", "wasn", "weren", "won", "wouldn",
))  # fmt: skip
_TOKEN = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> list[str]:
    """Lower-cased runs of letters and digits, stop words out ("Where's my cat?" -> ["cat"])."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOP_WORDS]


def session_units(s: Session) -> list[str]:
    """The session's units as HiveMem cuts them, each without its ``role:`` prefixes."""
    from contracts.kmms_records import KmmsEpisode, KmmsTurn
    from governance.kmms.phrasing import strip_roles
    from governance.kmms.units import units_of

    turns = [KmmsTurn(role=t.role, content=t.content) for t in s.turns]
    ep = KmmsEpisode(episode_id=s.session_id, session_id=s.session_id, thread_id="", content_type="conversation",
                     occurred_at=int(parse_iso(s.occurred_at).timestamp() * 1000), content=s.text(),
                     content_hash="", turns=turns)  # fmt: skip
    return [strip_roles(u.text) for u in units_of(ep)]


def best_per_session(scores: Sequence[float], owners: Sequence[int], sessions: int) -> list[float]:
    """Each session's best unit score (``-inf`` for a session without units)."""
    best = [float("-inf")] * sessions
    for score, s in zip(scores, owners, strict=True):
        best[s] = max(best[s], float(score))
    return best


def ranking(best: Sequence[float], candidates: Sequence[int], positive_only: bool = False) -> list[int]:
    """The candidate sessions by best score, highest first; ties in candidate order."""
    kept = [c for c in candidates if best[c] > float("-inf") and (best[c] > 0 or not positive_only)]
    return sorted(kept, key=lambda c: -best[c])  # stable: ties keep the candidates' order


def rrf(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[int]:
    """Reciprocal-rank fusion, equal weights: ``sum 1 / (k + rank)`` (ranks from 1); ties by the first ranking's
    order, then the next's."""
    score: dict[int, float] = {}
    for r in rankings:
        for rank, s in enumerate(r, start=1):
            score[s] = score.get(s, 0.0) + 1.0 / (k + rank)
    places = [{s: i for i, s in enumerate(r)} for r in rankings]
    return sorted(score, key=lambda s: (-score[s], *(p.get(s, len(p)) for p in places)))


@dataclass
class MemoryIndex:
    """One memory's units: its sessions (each one's first episode, in time order), each unit's session and
    episode's time, the unit vectors (rows, unit length) and BM25."""

    sessions: list[Session]
    owners: list[int]  # each unit's session (an index of ``sessions``)
    times: list[datetime]  # each unit's episode's time
    vectors: np.ndarray
    bm25: Any | None  # rank_bm25.BM25Okapi, None when no unit has a token
    texts: list[str] = field(default_factory=list)  # each unit's text (``answer``)

    def scores(self, question_vector: Sequence[float], question_tokens: Sequence[str],
               as_of: str) -> tuple[list[float], list[float] | None]:  # fmt: skip
        """Each unit's cosine to the question and its BM25 score (None without BM25 or question tokens), a unit of an
        episode after ``as_of`` at ``-inf``: what ``rank`` and ``answer`` rank."""
        limit = parse_iso(as_of)
        late = [t > limit for t in self.times]
        q = np.asarray(question_vector, dtype=np.float64)
        q = q / (np.linalg.norm(q) or 1.0)
        cos = self.vectors @ q if len(self.owners) else np.zeros(0)
        text = None
        if self.bm25 is not None and question_tokens:
            text = _until(list(self.bm25.get_scores(list(question_tokens))), late)
        return _until(cos.tolist(), late), text

    def rank(self, scores: tuple[list[float], list[float] | None]) -> dict[str, list[Session]]:
        """The sessions ranked by vector, by BM25 and fused (``SYSTEMS``' keys), each by its best unit's ``scores``."""
        cos, text = scores
        candidates = list(range(len(self.sessions)))
        n = len(self.sessions)
        by_vector = ranking(best_per_session(cos, self.owners, n), candidates)
        by_text: list[int] = []
        if text is not None:
            by_text = ranking(best_per_session(text, self.owners, n), candidates, positive_only=True)
        fused = rrf([by_vector, by_text])
        return {name: [self.sessions[i] for i in r[:KEEP]]
                for name, r in (("fused", fused), ("vector", by_vector), ("bm25", by_text))}  # fmt: skip

    def answer(self, scores: tuple[list[float], list[float] | None]) -> str:
        """The plain answer: the text of the unit first by the RRF of its vector and BM25 ranks (``scores``; the units
        up to the question's ``asOf``), "" when there is none: what a retriever of units hands an agent."""
        cos, text = scores
        units = list(range(len(self.owners)))
        by_text = ranking(text, units, positive_only=True) if text is not None else []
        fused = rrf([ranking(cos, units), by_text])
        return self.texts[fused[0]] if fused else ""


def _until(scores: Sequence[float], late: Sequence[bool]) -> list[float]:
    """``scores`` with a unit of an episode after the question's ``asOf`` at ``-inf``: never a session's best."""
    return [float("-inf") if x else float(v) for v, x in zip(scores, late, strict=True)]


@dataclass
class Baseline:
    results: dict[str, list[Retrieval]] = field(default_factory=dict)  # SYSTEMS key -> one per question
    units: int = 0
    distinct_texts: int = 0
    embed_s: float = 0.0
    cached: int = 0  # of the distinct texts, those whose vectors were read from the cache
    search_ms: list[float] = field(default_factory=list)  # per question: its vector, BM25 and fusion
    answers: list[str] = field(default_factory=list)  # per question, with ``answers``: ``MemoryIndex.answer``


def index_memory(sessions: Sequence[Session], vector_of: Callable[[str], np.ndarray],
                 units: Sequence[Sequence[str]] | None = None) -> MemoryIndex:  # fmt: skip
    """``sessions``: the memory's episodes (a corpus ``Session`` each); ``units``: each one's unit texts, in the same
    order, if already cut (``session_units`` otherwise). Episodes that share a session id are one session."""
    from rank_bm25 import BM25Okapi  # the dev extra (pyproject.toml)

    cut = list(units) if units is not None else [session_units(s) for s in sessions]
    # stable: the corpus' order within a time
    order = sorted(range(len(sessions)), key=lambda i: sessions[i].occurred_at)
    place: dict[str, int] = {}  # session id -> its index in ``ordered``
    ordered: list[Session] = []  # each session's first episode
    texts, owners, times = [], [], []
    for i in order:
        s = sessions[i]
        if s.session_id not in place:
            place[s.session_id] = len(ordered)
            ordered.append(s)
        for u in cut[i]:
            texts.append(u)
            owners.append(place[s.session_id])
            times.append(parse_iso(s.occurred_at))
    vectors = np.vstack([vector_of(t) for t in texts]) if texts else np.zeros((0, 1))
    docs = [tokens(t) for t in texts]
    bm25 = BM25Okapi(docs) if any(docs) else None
    return MemoryIndex(ordered, owners, times, vectors, bm25, texts)


def run(corpus: Corpus, embedder: Any, batch: int = 256, progress: Callable[[int, int], None] | None = None,
        cache: VectorCache | None = None, answers: bool = False) -> Baseline:  # fmt: skip
    """Index every memory of ``corpus`` (each distinct unit text embedded once, or read from ``cache`` when an
    earlier run of the same model embedded it) and rank every question; with ``answers``, each question's plain
    answer too (``MemoryIndex.answer``)."""
    out = Baseline()
    units = {u.user_id: [session_units(s) for s in u.sessions] for u in corpus.users}
    texts = list(dict.fromkeys(t for per in units.values() for us in per for t in us))
    out.units = sum(len(us) for per in units.values() for us in per)
    out.distinct_texts = len(texts)
    t0 = time.perf_counter()
    vectors: dict[str, np.ndarray] = cache.get(texts) if cache is not None else {}
    out.cached = len(vectors)
    todo = [t for t in texts if t not in vectors]
    for start in range(0, len(todo), batch):
        chunk = todo[start : start + batch]
        fresh = {}
        for text, v in zip(chunk, embedder.embed(chunk), strict=True):
            a = np.asarray(v, dtype=np.float64)
            fresh[text] = a / (np.linalg.norm(a) or 1.0)
        vectors.update(fresh)
        if cache is not None:
            cache.put(fresh)
        if progress:
            progress(out.cached + min(start + batch, len(todo)), len(texts))
    if progress and not todo:  # every vector read from the cache
        progress(len(texts), len(texts))
    out.embed_s = time.perf_counter() - t0
    indexes = {u.user_id: index_memory(u.sessions, vectors.__getitem__, units[u.user_id]) for u in corpus.users}
    out.results = {name: [] for name in SYSTEMS}
    for q in corpus.questions:
        t = time.perf_counter()
        index = indexes[q.user_id]
        scores = index.scores(embedder.embed_query(q.question), tokens(q.question), q.question_date)
        ranked = index.rank(scores)
        out.search_ms.append((time.perf_counter() - t) * 1000)
        if answers:  # from the same unit scores
            out.answers.append(index.answer(scores))
        for name, sessions in ranked.items():
            hits = tuple(RankedHit(s.session_id, parse_iso(s.occurred_at), parse_iso(s.occurred_at)) for s in sessions)
            out.results[name].append(Retrieval(hits))
    return out
