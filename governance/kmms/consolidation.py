"""Bottom-up consolidation (seed 000 §4): L4 episodes -> L3 summaries -> L2 facts -> L1 abstractions,
as a pure state machine over enriched episodes. The consolidator back-end (an LLM or the local
deterministic one) writes the text; these rules decide what becomes a node, a new version, a
reinforcement or a contradiction, and every outcome is an event (``Emitted``) the processor puts on
the log — so a replay folds the events and never calls a model again.

Rules:
- L4->L3: an (entity, topic) pair is consolidated when ``batch`` (default 3, seed §4.2) of its
  episodes are waiting (an episode in which the owner speaks of themself also waits in the owner's
  pair of its topic when its entity is another, and a conversation between named people in each
  person's: ``enriched``). They are grouped by ISO week of their
  event time (X-18: default window = week); a window that already has a summary gets a merged new
  version that SUPERSEDES it.
- L3->L2: each extracted fact is matched on (entity, key). The same value reinforces the current
  node (strength +0.1, capped); a new key creates version 1; a different value is a contradiction,
  classified by the back-end (direct / temporal / contextual) and resolved by X-16: temporal ->
  supersede, contextual -> coexist, direct -> flag_for_review unless the fact says it updates the
  existing one. A fact older (in event time) than the current value is history: it is recorded
  already superseded by the current one, so ingesting out of order never turns back the clock.
- L2->L1: any L2 change of an entity regenerates its abstraction; Jaccard < 0.70 against the
  current L1 gives a new version (SUPERSEDES), otherwise the current one is only re-verified —
  except when one of the entity's values was superseded (moved, changed jobs): that is the
  "major conceptual shift" of seed §4.1, and an abstraction that still says the old value would
  answer CURRENT questions wrongly, however many words it shares with the new one.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from governance.kmms.abstraction import l1_action
from governance.kmms.contradiction import resolve
from governance.kmms.phrasing import people
from governance.kmms.strength import reinforce
from governance.kmms.values import USER_ENTITY, ContradictionClass, EpisodeText, ExtractedFact, Summary

_NS = uuid.UUID("a3c9e4f2-1b6d-4e8a-9f70-5d2c8b1e4a63")
DEFAULT_BATCH = 3


class Consolidator(Protocol):
    """A consolidator back-end (``inference.kmms.local``, ``inference.kmms.llm``): the text of summaries, facts
    and abstractions and the class of a contradiction; what becomes a node is this module's rule."""

    model_id: str  # recorded with every output, e.g. "local-v1" or "llm:smollm2"

    def summarize(self, entity: str, topic: str, window: str, episodes: Sequence[EpisodeText],
                  previous: Summary | None) -> Summary: ...  # fmt: skip

    def extract_facts(self, entity: str, summary: Summary, episodes: Sequence[EpisodeText],
                      existing: Mapping[str, str]) -> list[ExtractedFact]: ...  # fmt: skip

    def classify(self, key: str, old_value: str, new_value: str, old_quote: str,
                 new_quote: str) -> ContradictionClass: ...  # fmt: skip

    def abstract(self, entity: str, facts: Sequence[tuple[str, str]]) -> str: ...


class NodeRef(BaseModel):
    node_id: str
    version: int
    text: str
    sources: list[str] = Field(default_factory=list)


class FactRef(BaseModel):
    node_id: str
    key: str
    value: str
    version: int
    quote: str
    valid_from: int
    strength: float = 1.0


class ScopeState(BaseModel):
    """One memory's consolidation state (persisted as JSON per memory)."""

    texts: dict[str, EpisodeText] = Field(default_factory=dict)  # stored, not yet consolidated
    pending: dict[str, list[str]] = Field(default_factory=dict)  # "entity|topic" -> waiting episode ids
    l3: dict[str, NodeRef] = Field(default_factory=dict)  # "entity|topic|window"
    facts: dict[str, list[FactRef]] = Field(default_factory=dict)  # "entity|key" -> current values
    l1: dict[str, NodeRef] = Field(default_factory=dict)  # entity


Kind = Literal["NODE_CREATED", "NODE_SUPERSEDED", "NODE_REINFORCED", "NODE_VERIFIED", "CONTRADICTION_LOGGED"]


@dataclass(frozen=True)
class NewNode:
    node_id: str
    layer: int
    entity: str
    topic: str
    content: str
    version: int
    supersedes: str | None
    valid_from: int
    event_time: int
    confidence: float
    source_ids: tuple[str, ...]
    time_window: str | None = None
    fact_key: str | None = None
    fact_value: str | None = None
    fact_type: str | None = None
    context: str | None = None


@dataclass(frozen=True)
class Emitted:
    kind: Kind
    node: NewNode | None = None
    node_id: str | None = None
    related_id: str | None = None  # superseded_by / contradicting node / reinforcing summary
    detail: str | None = None
    value: float | None = None  # new strength; the time a supersession takes effect


def week_of(ms: int) -> str:
    y, w, _ = datetime.fromtimestamp(ms / 1000, UTC).isocalendar()
    return f"{y}-W{w:02d}"


def week_start_ms(window: str) -> int:
    y, w = window.split("-W")
    start = datetime.fromisocalendar(int(y), int(w), 1).replace(tzinfo=UTC)
    return int(start.timestamp() * 1000)


def week_end_ms(window: str) -> int:
    return week_start_ms(window) + int(timedelta(days=7).total_seconds() * 1000) - 1


def _norm(value: str) -> str:
    return " ".join(value.lower().split()).strip(" .")


class ConsolidationEngine:
    def __init__(self, backend: Consolidator, batch: int = DEFAULT_BATCH) -> None:
        self.backend = backend
        self.batch = batch

    def stored(self, st: ScopeState, episode: EpisodeText) -> None:
        st.texts[episode.episode_id] = episode

    def enriched(self, st: ScopeState, episode_id: str, entity: str, topic: str, source: str,
                 owner: bool = False) -> list[Emitted]:  # fmt: skip
        """An episode was tagged (entity, topic); consolidate the pair once ``batch`` are waiting. ``owner``: the
        owner speaks of themself in it (its enrichment lists the owner among its entities). An episode whose
        entity is another then also joins the owner's pair of the topic: an owner says things about their own
        life in passing ("the move from Prague to Melbourne went fine", in a chat about keyboards whose entity
        is Prague), and read only with that entity's episodes they would never be the owner's facts."""
        if episode_id not in st.texts:
            return []  # not stored here (e.g. erased); nothing to consolidate
        pairs = [(entity, topic)] + ([(USER_ENTITY, topic)] if owner and entity != USER_ENTITY else [])
        # A conversation between named people: each person's pair of the topic too, where the back-end reads that
        # person's own words as theirs (inference/kmms/local.py, ``sentences_for``).
        pairs += [(name, topic) for name in sorted(people(st.texts[episode_id].text)) if (name, topic) not in pairs]
        for about, t in pairs:  # queued in every pair first: consolidating one must not drop the episode's text
            waiting = st.pending.setdefault(f"{about}|{t}", [])
            if episode_id not in waiting:
                waiting.append(episode_id)
        ids = _Ids(source)  # one counter for every pair: their nodes' ids never collide
        out: list[Emitted] = []
        for about, t in pairs:
            if len(st.pending[f"{about}|{t}"]) >= self.batch:
                out += self._consolidate(st, ids, about, t)
        return out

    def _consolidate(self, st: ScopeState, ids: _Ids, entity: str, topic: str) -> list[Emitted]:
        pair = f"{entity}|{topic}"
        episodes = sorted(
            (st.texts[e] for e in st.pending[pair] if e in st.texts), key=lambda e: (e.occurred_at_ms, e.episode_id)
        )
        del st.pending[pair]
        out: list[Emitted] = []
        changed: dict[str, bool] = {}  # entity -> one of its values was superseded
        by_window: dict[str, list[EpisodeText]] = {}
        for e in episodes:
            by_window.setdefault(week_of(e.occurred_at_ms), []).append(e)
        for window in sorted(by_window):
            out += self._summarize(st, ids, entity, topic, window, by_window[window], changed)
        for e in episodes:
            if not any(e.episode_id in w for w in st.pending.values()):
                st.texts.pop(e.episode_id, None)
        for ent in sorted(changed):
            out += self._abstract(st, ids, ent, topic, changed[ent])
        return out

    def _summarize(self, st: ScopeState, ids: _Ids, entity: str, topic: str, window: str,
                   episodes: list[EpisodeText], changed: dict[str, bool]) -> list[Emitted]:  # fmt: skip
        key = f"{entity}|{topic}|{window}"
        prev = st.l3.get(key)
        previous = Summary(prev.text, tuple(prev.sources)) if prev else None
        summary = self.backend.summarize(entity, topic, window, episodes, previous)
        if not summary.text.strip():
            # Nothing in the window told of the pair's entity (the owner's pair of a chat where only named people
            # spoke, or only its other side, sent as the assistant's turns): a summary of nothing would be a node no
            # vector can be computed from, and the episodes it cited would never be searchable
            # (``projections.kmms.queries.indexed``). The episodes stay L4 only there.
            return []
        sources = sorted({*(prev.sources if prev else []), *summary.source_episode_ids,
                          *(e.episode_id for e in episodes)})  # fmt: skip
        node = NewNode(ids.next("l3"), 3, entity, topic, summary.text, (prev.version + 1) if prev else 1,
                       prev.node_id if prev else None, min(e.occurred_at_ms for e in episodes),
                       max(e.occurred_at_ms for e in episodes), 0.85, tuple(sources), time_window=window)  # fmt: skip
        out = [Emitted("NODE_CREATED", node)]
        if prev is not None:
            out.append(Emitted("NODE_SUPERSEDED", node_id=prev.node_id, related_id=node.node_id, value=node.event_time))
        st.l3[key] = NodeRef(node_id=node.node_id, version=node.version, text=summary.text, sources=sources)
        existing = {k.split("|", 1)[1]: v[-1].value for k, v in st.facts.items() if k.startswith(f"{entity}|") and v}
        facts = self.backend.extract_facts(entity, summary, episodes, existing)
        timed = sorted(((self._when(f, episodes), i, f) for i, f in enumerate(facts)), key=lambda x: (x[0], x[1]))
        for at, _, f in timed:
            emitted = self._fact(st, ids, entity, topic, f, at, node.node_id)
            if any(e.kind in ("NODE_CREATED", "NODE_SUPERSEDED") for e in emitted):
                created = {e.node.node_id for e in emitted if e.node is not None}
                # A current value replaced (not a late historical one recorded already superseded).
                shifted = any(e.kind == "NODE_SUPERSEDED" and e.node_id not in created for e in emitted)
                changed[entity] = changed.get(entity, False) or shifted
            out += emitted
        return out

    @staticmethod
    def _when(f: ExtractedFact, episodes: list[EpisodeText]) -> int:
        """The event time of a fact: that of the episode its quote comes from (else the latest)."""
        quote = _norm(f.source_quote)
        for e in episodes:
            if quote and quote in _norm(e.text):
                return e.occurred_at_ms
        return max(e.occurred_at_ms for e in episodes)

    def _fact(self, st: ScopeState, ids: _Ids, entity: str, topic: str, f: ExtractedFact, at: int,
              summary_id: str) -> list[Emitted]:  # fmt: skip
        k = f"{entity}|{f.key}"
        current = st.facts.get(k, [])
        same = [x for x in current if _norm(x.value) == _norm(f.value)]
        if same:
            ref = same[-1]
            ref.strength = reinforce(ref.strength)
            return [Emitted("NODE_REINFORCED", node_id=ref.node_id, related_id=summary_id, value=ref.strength)]

        def new(version: int, supersedes: str | None, context: str | None = None) -> NewNode:
            return NewNode(ids.next("l2"), 2, entity, topic, f.source_quote, version, supersedes, at, at, f.confidence,
                           (summary_id,), fact_key=f.key, fact_value=f.value, fact_type=f.fact_type,
                           context=context)  # fmt: skip

        def ref_of(n: NewNode) -> FactRef:
            return FactRef(node_id=n.node_id, key=f.key, value=f.value, version=n.version, quote=f.source_quote,
                           valid_from=at)  # fmt: skip

        if not current:
            node = new(1, None)
            st.facts[k] = [ref_of(node)]
            return [Emitted("NODE_CREATED", node)]
        old = max(current, key=lambda x: (x.valid_from, x.version))
        if at < old.valid_from:  # history arriving late: recorded, already superseded by what is current
            node = new(old.version, None, context="historical")
            later = Emitted("NODE_SUPERSEDED", node_id=node.node_id, related_id=old.node_id, value=old.valid_from)
            return [Emitted("NODE_CREATED", node), later]
        cls = self.backend.classify(f.key, old.value, f.value, old.quote, f.source_quote)
        resolution = resolve(cls, f.updates_existing is not None)
        node = new(old.version + 1, old.node_id if resolution == "supersede" else None,
                   context=None if resolution == "supersede" else resolution)  # fmt: skip
        out = [Emitted("NODE_CREATED", node),
               Emitted("CONTRADICTION_LOGGED", node_id=old.node_id, related_id=node.node_id,
                       detail=f"{cls}:{resolution}")]  # fmt: skip
        if resolution == "supersede":
            out.append(Emitted("NODE_SUPERSEDED", node_id=old.node_id, related_id=node.node_id, value=at))
            st.facts[k] = [x for x in current if x.node_id != old.node_id] + [ref_of(node)]
        else:
            st.facts[k] = [*current, ref_of(node)]
        return out

    def _abstract(self, st: ScopeState, ids: _Ids, entity: str, topic: str, shifted: bool) -> list[Emitted]:
        facts = sorted((k.split("|", 1)[1], v.value, v.valid_from) for k, refs in st.facts.items()
                       if k.startswith(f"{entity}|") for v in refs)  # fmt: skip
        if not facts:
            return []
        text = self.backend.abstract(entity, [(key, value) for key, value, _ in facts])
        cur = st.l1.get(entity)
        if cur is not None and not shifted and l1_action(cur.text, text) == "VERIFY":
            return [Emitted("NODE_VERIFIED", node_id=cur.node_id)]
        when = max(t for *_, t in facts)
        sources = sorted({r.node_id for k, refs in st.facts.items() if k.startswith(f"{entity}|") for r in refs})
        node = NewNode(ids.next("l1"), 1, entity, topic, text, (cur.version + 1) if cur else 1,
                       cur.node_id if cur else None, when, when, 0.5, tuple(sources))  # fmt: skip
        st.l1[entity] = NodeRef(node_id=node.node_id, version=node.version, text=text, sources=list(node.source_ids))
        out = [Emitted("NODE_CREATED", node)]
        if cur is not None:
            out.append(Emitted("NODE_SUPERSEDED", node_id=cur.node_id, related_id=node.node_id, value=when))
        return out


class _Ids:
    """Deterministic node ids: the triggering input's position and a counter per layer."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.n: dict[str, int] = {}

    def next(self, role: str) -> str:
        self.n[role] = self.n.get(role, 0) + 1
        return str(uuid.uuid5(_NS, f"{self.source}|{role}|{self.n[role]}"))
