"""KMP answers built from an about's rows as known at a time: pure functions, no SQL.

``Snapshot`` is what ``projections/kmp/queries.py`` loads (entries, relations, evidence with
``known_at`` <= the question's time); everything here derives wake, navigation, trace and
inspect from it, deterministically, so the same log and the same ``known_at`` give the same answer.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from governance.kmp import cursors
from governance.kmp.cursors import TimelineKey
from governance.kmp.relations import CAUSAL_SPINE, CONFLICTING, SUPERSEDING

SUMMARY_CHARS = 280  # a summary read is not a raw read (seed 001, security)
OBJECTIVE_KINDS = ("objective", "goal", "task")
OPEN_KINDS = ("question", "hypothesis", "todo", "open_loop")
NEXT_KINDS = ("next_action", "plan")
GUARD_KINDS = ("guardrail", "constraint")
CLOSING = frozenset({"answers", "resolves", "verified_by", "satisfies_constraint", "supersedes", "replaces", "corrects",
                     "contradicts"})  # fmt: skip


class View(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class EntryView(View):
    ref: str
    about: str
    kind: str
    summary: str  # the text, cut to 280 characters; inspect with include.raw gives it whole
    occurred_at: int
    known_at: int
    dimensions: list[str]
    source_agent: str
    superseded_by: str | None = None


class RelationView(View):
    about: str
    source_ref: str
    target_ref: str
    rel: str
    semantic_class: str
    why: str
    evidence_refs: list[str]
    quality: str
    known_at: int


class EvidenceView(View):
    ref: str
    about: str
    text: str
    supports: list[str]
    source: str
    known_at: int


@dataclass(frozen=True)
class EntryRow:
    about: str
    ref: str
    kind: str
    text: str
    occurred_at: int
    known_at: int
    seq: int
    dims: tuple[str, ...]
    source_agent: str

    @property
    def key(self) -> TimelineKey:
        return TimelineKey(self.occurred_at, self.known_at, self.seq)


@dataclass
class Snapshot:
    about: str
    known_at: int
    entries: list[EntryRow] = field(default_factory=list)  # in timeline order
    relations: list[RelationView] = field(default_factory=list)  # in log order
    evidence: list[EvidenceView] = field(default_factory=list)

    def superseded(self) -> dict[str, RelationView]:
        """target ref -> the relation that superseded it (the latest one)."""
        return {r.target_ref: r for r in self.relations if r.rel in SUPERSEDING and r.quality != "SUSPECT"}

    def entry_view(self, e: EntryRow) -> EntryView:
        by = self.superseded().get(e.ref)
        return EntryView(ref=e.ref, about=e.about, kind=e.kind, summary=summary(e.text), occurred_at=e.occurred_at,
                         known_at=e.known_at, dimensions=list(e.dims), source_agent=e.source_agent,
                         superseded_by=by.source_ref if by else None)  # fmt: skip

    def evidence_of(self, ref: str) -> list[EvidenceView]:
        cited = {x for r in self.relations if ref in (r.source_ref, r.target_ref) for x in r.evidence_refs}
        return [v for v in self.evidence if ref in v.supports or v.ref in cited]


def summary(text: str) -> str:
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


class SpineLink(View):
    claim: str  # the entry that was decided or happened
    claim_ref: str
    rel: str
    because: str  # what it rests on
    because_ref: str
    why: str
    evidence_refs: list[str]


class Wake(View):
    about: str
    known_at: int
    objective: EntryView | None
    current_state: list[EntryView]
    causal_spine: list[SpineLink]
    open_loops: list[EntryView]
    next_actions: list[EntryView]
    guardrails: list[EntryView]
    resume_cursor: str | None
    entries_seen: int
    warnings: list[str]


def wake(s: Snapshot, max_entries: int, resume_cursor: str | None) -> Wake:
    """The minimal state to pick the about back up: objective, what holds now (the latest entry of
    each dimension that nothing superseded), the causal spine (rich causal relations, newest last),
    open loops (questions and hypotheses nothing answered or resolved), next actions, guardrails."""
    gone = s.superseded()
    live = [e for e in s.entries if e.ref not in gone]
    closed = {r.target_ref for r in s.relations if r.rel in CLOSING}
    objective = next((e for e in live if e.kind in OBJECTIVE_KINDS), live[0] if live else None)
    latest: dict[str, EntryRow] = {}
    for e in live:
        for d in e.dims or ("(none)",):
            latest[d] = e
    state = sorted({e.ref: e for e in latest.values()}.values(), key=lambda e: e.key)[-max_entries:]
    by_ref = {e.ref: e for e in s.entries}
    spine = [SpineLink(claim=summary(by_ref[r.source_ref].text), claim_ref=r.source_ref, rel=r.rel,
                       because=summary(by_ref[r.target_ref].text), because_ref=r.target_ref, why=r.why,
                       evidence_refs=r.evidence_refs)
             for r in s.relations if r.rel in CAUSAL_SPINE and r.quality == "RICH"
             and r.source_ref in by_ref and r.target_ref in by_ref][-max_entries:]  # fmt: skip
    warnings = [] if s.entries else ["NO_MEMORY: nothing was known about this about at known_at"]
    pick = lambda kinds: [s.entry_view(e) for e in live if e.kind in kinds and e.ref not in closed][-max_entries:]  # noqa: E731
    return Wake(about=s.about, known_at=s.known_at, objective=s.entry_view(objective) if objective else None,
                current_state=[s.entry_view(e) for e in state], causal_spine=spine, open_loops=pick(OPEN_KINDS),
                next_actions=pick(NEXT_KINDS), guardrails=pick(GUARD_KINDS), resume_cursor=resume_cursor,
                entries_seen=len(s.entries), warnings=warnings)  # fmt: skip


class TraceOut(View):
    about: str
    known_at: int
    found: bool
    trace: list[RelationView]  # the path's relations from `from` to `to`, in path order
    hops: int
    explored: int
    page_total: int
    next_offset: int | None
    warnings: list[str]


def trace(s: Snapshot, src: str, dst: str, max_depth: int) -> tuple[list[RelationView], int]:
    """Shortest relation path between two refs (relations followed both ways; rich ones first at
    each step, so an explained path beats an anemic one of the same length). (path, nodes explored)."""
    rank = {"RICH": 0, "ANEMIC": 1, "STRUCTURAL": 2, "SUSPECT": 3}
    adj: dict[str, list[tuple[int, str, RelationView]]] = {}
    for r in s.relations:
        adj.setdefault(r.source_ref, []).append((rank.get(r.quality, 4), r.target_ref, r))
        adj.setdefault(r.target_ref, []).append((rank.get(r.quality, 4), r.source_ref, r))
    prev: dict[str, tuple[str, RelationView] | None] = {src: None}
    frontier: deque[tuple[str, int]] = deque([(src, 0)])
    while frontier:
        node, depth = frontier.popleft()
        if node == dst:
            break
        if depth >= max_depth:
            continue
        for _, nxt, rel in sorted(adj.get(node, []), key=lambda x: (x[0], x[1])):
            if nxt not in prev:
                prev[nxt] = (node, rel)
                frontier.append((nxt, depth + 1))
    if dst not in prev or src == dst:
        return [], len(prev)
    path: list[RelationView] = []
    node = dst
    while (step := prev[node]) is not None:
        node, rel = step
        path.append(rel)
    return path[::-1], len(prev)


def conflicts_among(s: Snapshot, refs: Sequence[str]) -> list[RelationView]:
    wanted = set(refs)
    return [r for r in s.relations if r.rel in CONFLICTING and (r.source_ref in wanted or r.target_ref in wanted)]


class NavError(Exception):
    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail


@dataclass(frozen=True)
class Moved:
    indices: range  # into the snapshot's entries, ascending
    direction: str  # around, backward, forward
    next_cursor: str | None  # goes on in that direction (None when nothing is left now)
    has_more: bool
    landed: int | None  # the entry the cursor names exactly, if it does


def move(s: Snapshot, op: str, ref: str | None, time: int | None, token: str | None, before: int, after: int,
         limit: int) -> Moved:  # fmt: skip
    """goto / near / rewind / forward over the about's timeline. The cursor is a page token, an entry
    ref or an occurred-at time; rewind without one starts at the end, forward at the start."""
    keys = [e.key for e in s.entries]
    n = len(keys)
    center: int | None = None
    exact = False
    if token is not None:
        try:
            key, _ = cursors.decode_cursor(token)
        except cursors.CursorError as exc:
            raise NavError(422, exc.code, exc.detail) from exc
        center = cursors.locate(keys, key)
        exact = center < n and keys[center] == key
    elif ref is not None:
        center = next((i for i, e in enumerate(s.entries) if e.ref == ref), None)
        if center is None:
            raise NavError(404, "REF_NOT_FOUND", f"no entry {ref!r} in about {s.about} at knownAt")
        exact = True
    elif time is not None:
        center = cursors.locate(keys, time)
        exact = center < n and keys[center].occurred_at == time
    elif op in ("goto", "near"):
        raise NavError(422, "CURSOR_REQUIRED", f"{op} needs cursor.ref, cursor.time or cursor.token")
    if op in ("goto", "near"):
        assert center is not None
        idx = cursors.near(n, center, cursors.Window(0, 0) if op == "goto" else cursors.Window(before, after))
        direction, edge, more = "around", None, False
    elif op == "rewind":
        stop = n if center is None else center
        idx = range(max(0, stop - limit), stop)
        direction, edge, more = "backward", (keys[idx.start] if idx else None), idx.start > 0
    else:
        start = 0 if center is None else center + (1 if exact else 0)
        idx = range(start, min(n, start + limit))
        direction, edge, more = "forward", (keys[idx[-1]] if idx else None), idx.stop < n
    nxt = cursors.encode_cursor(edge, direction) if edge is not None and more else None
    return Moved(idx, direction, nxt, more, center if exact else None)
