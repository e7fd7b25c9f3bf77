"""Proposals, votes and decisions (seed 004): the governance processor's rules, pure.

``GovernanceState.apply(envelope, source)`` takes one accepted presence, proposal or vote
and returns what follows from it: decisions, facts and refusals (with reason codes).
``tick(now)`` closes proposals whose deadline has passed. No Kafka, no SQL: the processor
persists the state this module keeps and publishes its outputs.

Rules:
- one proposal per id (DUPLICATE_PROPOSAL); its deadline must lie ahead (DEADLINE_PASSED);
  its ``baseVersion`` must be the fact key's current version (FACT_STALE / FACT_CONFLICT);
- one vote per (proposal, claw), however it arrives (DUPLICATE_VOTE); no vote after the
  deadline (VOTE_AFTER_DEADLINE) or after the decision (PROPOSAL_CLOSED); a vote read
  before its proposal waits up to ``pending_limit_ms`` (then UNKNOWN_PROPOSAL);
- each counted vote re-tallies over the claws active at the vote's log time (governance/votes/quorum.py);
  the first majority decides. At the deadline an undecided proposal EXPIRES;
- a claw's presence is a history of its heartbeats (quorum.Presence), so a vote read long after
  newer heartbeats (presence read ahead through an outage) is judged by the heartbeats around
  its own log time;
- presence and votes travel on different topics, so a heartbeat can be read after a vote
  it counts for: one logged before the vote, or up to the window after it (governance/votes/quorum.py: a claw just
  starting, with no heartbeat before a vote, counts by its first one after). Such a heartbeat
  re-tallies the tenant's open proposals at their last vote's log time: the verdict is then the
  one an in-order read gives, whatever the batching (a replay reproduces it). A heartbeat logged
  more than the window after the last vote changes nothing;
- exactly one decision per proposal; an approval publishes fact ``baseVersion + 1`` unless
  another approval for the key got there first (the fact is then refused, FACT_STALE).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass

from pydantic import BaseModel

from contracts.models import (
    DecisionPayload,
    Envelope,
    FactPayload,
    PresencePayload,
    ProposalPayload,
    VotePayload,
)
from governance.votes.fact_versions import check_update
from governance.votes.quorum import (
    DEFAULT_PRESENCE_HISTORY_MS,
    DEFAULT_PRESENCE_WINDOW_MS,
    MIN_PARTICIPANTS,
    Heartbeat,
    Presence,
    active_claws,
    tally,
)

TenantKey = tuple[str, str]  # (tenant, proposal id | claw id | fact key)


@dataclass(frozen=True)
class VotingConfig:
    presence_window_ms: int = DEFAULT_PRESENCE_WINDOW_MS
    presence_history_ms: int = DEFAULT_PRESENCE_HISTORY_MS  # heartbeats kept behind the newest
    min_participants: int = MIN_PARTICIPANTS
    expiry_grace_ms: int = 1_000  # wait this long past a deadline for late-read votes
    pending_limit_ms: int = 60_000  # how long a vote may wait for its proposal


class Ref(BaseModel):
    """Where an input came from and who sent it: enough to refuse it later, with trace data."""

    tenant: str
    type: str
    trace_id: str
    claw_id: str
    instance_id: str
    idempotency_key: str
    event_id: str
    topic: str
    partition: int
    offset: int
    log_time: int

    @classmethod
    def of(cls, env: Envelope, topic: str, partition: int, offset: int, log_time: int) -> Ref:
        return cls(tenant=env.tenant, type=env.type, trace_id=env.trace_id, claw_id=env.claw_id,
                   instance_id=env.instance_id, idempotency_key=env.idempotency_key, event_id=env.event_id,
                   topic=topic, partition=partition, offset=offset, log_time=log_time)  # fmt: skip


class Ballot(BaseModel):
    claw_id: str
    yes: bool
    reason: str | None = None
    ref: Ref


class ProposalState(BaseModel):
    tenant: str
    proposal_id: str
    proposal: ProposalPayload | None = None  # None while only early votes are known
    ref: Ref | None = None
    ballots: dict[str, Ballot] = {}
    pending: list[Ballot] = []
    decision: DecisionPayload | None = None
    fact_version: int | None = None
    fact_refusal: str | None = None

    @property
    def open(self) -> bool:
        return self.decision is None and (self.proposal is not None or bool(self.pending))


@dataclass(frozen=True)
class DecisionOut:
    tenant: str
    trace_id: str
    payload: DecisionPayload


@dataclass(frozen=True)
class FactOut:
    tenant: str
    trace_id: str
    payload: FactPayload


@dataclass(frozen=True)
class Refusal:
    ref: Ref
    code: str
    detail: str


Output = DecisionOut | FactOut | Refusal


class GovernanceState:
    def __init__(self, cfg: VotingConfig | None = None) -> None:
        self.cfg = cfg or VotingConfig()
        self.proposals: dict[TenantKey, ProposalState] = {}
        self.presence: dict[str, dict[str, Presence]] = {}  # tenant -> claw -> heartbeat history
        self.facts: dict[TenantKey, int] = {}  # (tenant, fact key) -> current version
        self._open: set[TenantKey] = set()
        self._open_by_tenant: dict[str, set[str]] = {}  # so a late heartbeat scans its tenant only
        # When each open proposal next needs a tick (its deadline + grace, or its first early vote's give-up
        # time), earliest first: a tick reads the due ones only, not every open proposal (20,000 open ones
        # made each batch sort and scan them all). Entries of proposals closed since are dropped when reached.
        self._due: list[tuple[int, TenantKey]] = []
        self.dirty_proposals: set[TenantKey] = set()
        self.dirty_presence: set[TenantKey] = set()
        self.dirty_facts: set[TenantKey] = set()

    # --- loading (the processor restores persisted state through these) -----------------

    def restore_proposal(self, ps: ProposalState) -> None:
        key = (ps.tenant, ps.proposal_id)
        self.proposals[key] = ps
        if ps.open:
            self._mark_open(key)
            self._schedule(ps)

    def restore_presence(self, tenant: str, claw_id: str, history: Presence) -> None:
        self.presence.setdefault(tenant, {})[claw_id] = history

    def restore_fact(self, tenant: str, fact_key: str, version: int) -> None:
        self.facts[(tenant, fact_key)] = version

    def clear_dirty(self) -> None:
        self.dirty_proposals.clear()
        self.dirty_presence.clear()
        self.dirty_facts.clear()

    # --- inputs --------------------------------------------------------------------------

    def apply(self, env: Envelope, ref: Ref) -> list[Output]:
        p = env.payload
        if isinstance(p, PresencePayload):
            hb = Heartbeat(ref.log_time, p.status == "ACTIVE" and p.healthy)
            return self._retally_late(env.tenant, hb.last_seen) if self._heartbeat(env.tenant, env.claw_id, hb) else []
        if isinstance(p, ProposalPayload):
            return self._propose(p, ref)
        if isinstance(p, VotePayload):
            ballot = Ballot(claw_id=env.claw_id, yes=p.vote == "YES", reason=p.reason, ref=ref)
            return self._vote(env.tenant, p.proposal_id, ballot)
        return []

    def tick(self, now: int) -> list[Output]:
        """Expire proposals past deadline + grace; give up on votes whose proposal never came."""
        due: set[TenantKey] = set()
        while self._due and self._due[0][0] <= now:
            _, key = heapq.heappop(self._due)
            ps = self.proposals.get(key)
            at = self._due_at(ps) if ps is not None and ps.open else None
            if at is not None and at > now:  # rescheduled since (its early votes were refused, then new ones came)
                heapq.heappush(self._due, (at, key))
            elif at is not None:
                due.add(key)
        out: list[Output] = []
        for key in sorted(due):
            ps = self.proposals[key]
            if ps.proposal is not None and now >= ps.proposal.deadline + self.cfg.expiry_grace_ms:
                out += self._decide(ps, ps.proposal.deadline, expired=True)
            elif ps.proposal is None and ps.pending and now >= ps.pending[0].ref.log_time + self.cfg.pending_limit_ms:
                for b in ps.pending:
                    out.append(Refusal(b.ref, "UNKNOWN_PROPOSAL", f"no proposal {ps.proposal_id} arrived in time"))
                ps.pending = []
                self._touch(ps)
        return out

    def active(self, tenant: str, at: int) -> frozenset[str]:
        return active_claws(self.presence.get(tenant, {}), at, self.cfg.presence_window_ms)

    def open_proposals(self) -> Iterator[ProposalState]:
        return (self.proposals[k] for k in sorted(self._open))

    # --- rules ---------------------------------------------------------------------------

    def _heartbeat(self, tenant: str, claw_id: str, hb: Heartbeat) -> bool:
        claws = self.presence.setdefault(tenant, {})
        current = claws.get(claw_id)
        history = Presence.of(hb) if current is None else current.beat(hb, self.cfg.presence_window_ms,
                                                                         self.cfg.presence_history_ms)  # fmt: skip
        if history is None:
            return False
        claws[claw_id] = history
        self.dirty_presence.add((tenant, claw_id))
        return True

    def _retally_late(self, tenant: str, hb_at: int) -> list[Output]:
        """Re-tally the open proposals whose last vote ``hb_at`` can count for: logged at most the presence window
        before it (a claw's first heartbeat after a vote counts for it within the window), or after it."""
        out: list[Output] = []
        for pid in sorted(self._open_by_tenant.get(tenant, ())):
            ps = self.proposals[(tenant, pid)]
            if ps.proposal is None or not ps.ballots:
                continue
            last = max(b.ref.log_time for b in ps.ballots.values())
            if hb_at <= last + self.cfg.presence_window_ms:
                out += self._decide(ps, last, expired=False)
        return out

    def _due_at(self, ps: ProposalState) -> int | None:
        if ps.proposal is not None:
            return ps.proposal.deadline + self.cfg.expiry_grace_ms
        if ps.pending:
            return ps.pending[0].ref.log_time + self.cfg.pending_limit_ms
        return None

    def _schedule(self, ps: ProposalState) -> None:
        at = self._due_at(ps)
        if at is not None:
            heapq.heappush(self._due, (at, (ps.tenant, ps.proposal_id)))

    def _mark_open(self, key: TenantKey) -> None:
        self._open.add(key)
        self._open_by_tenant.setdefault(key[0], set()).add(key[1])

    def _touch(self, ps: ProposalState) -> None:
        key = (ps.tenant, ps.proposal_id)
        self.dirty_proposals.add(key)
        if ps.open:
            self._mark_open(key)
        else:
            self._open.discard(key)
            self._open_by_tenant.get(ps.tenant, set()).discard(ps.proposal_id)

    def _propose(self, p: ProposalPayload, ref: Ref) -> list[Output]:
        key = (ref.tenant, p.proposal_id)
        ps = self.proposals.get(key) or ProposalState(tenant=ref.tenant, proposal_id=p.proposal_id)
        if ps.proposal is not None:
            first = ps.ref.event_id if ps.ref else "?"
            return [Refusal(ref, "DUPLICATE_PROPOSAL", f"proposal {p.proposal_id} exists (event {first})")]
        if p.deadline <= ref.log_time:
            return [Refusal(ref, "DEADLINE_PASSED", f"deadline {p.deadline} is not after {ref.log_time}")]
        bad = check_update(self.facts.get((ref.tenant, p.fact_key), 0), p.base_version)
        if bad is not None:
            return [Refusal(ref, bad.code, f"fact {p.fact_key}: {bad.detail}")]
        ps.proposal, ps.ref = p, ref
        self.proposals[key] = ps
        waiting, ps.pending = sorted(ps.pending, key=lambda b: b.ref.log_time), []
        self._touch(ps)
        self._schedule(ps)
        out: list[Output] = []
        for b in waiting:
            out += self._vote(ref.tenant, p.proposal_id, b)
        return out

    def _vote(self, tenant: str, proposal_id: str, b: Ballot) -> list[Output]:
        key = (tenant, proposal_id)
        ps = self.proposals.get(key)
        if ps is None or ps.proposal is None:
            ps = ps or ProposalState(tenant=tenant, proposal_id=proposal_id)
            self.proposals[key] = ps
            if any(w.claw_id == b.claw_id for w in ps.pending):
                return [Refusal(b.ref, "DUPLICATE_VOTE", f"{b.claw_id} already voted on {proposal_id}")]
            ps.pending.append(b)
            self._touch(ps)
            if len(ps.pending) == 1:  # the give-up time runs from the first early vote
                self._schedule(ps)
            return []
        if ps.decision is not None:
            return [Refusal(b.ref, "PROPOSAL_CLOSED", f"{proposal_id} was decided: {ps.decision.outcome}")]
        if b.claw_id in ps.ballots:
            first = ps.ballots[b.claw_id].ref.event_id
            return [Refusal(b.ref, "DUPLICATE_VOTE", f"{b.claw_id} already voted on {proposal_id} (event {first})")]
        if b.ref.log_time > ps.proposal.deadline:
            return [Refusal(b.ref, "VOTE_AFTER_DEADLINE", f"voting on {proposal_id} closed at {ps.proposal.deadline}")]
        ps.ballots[b.claw_id] = b
        self._touch(ps)
        return self._decide(ps, b.ref.log_time, expired=False)

    def _decide(self, ps: ProposalState, at: int, *, expired: bool) -> list[Output]:
        assert ps.proposal is not None and ps.ref is not None
        ballots = ((c, b.yes) for c, b in ps.ballots.items())
        t = tally(ballots, self.active(ps.tenant, at), self.cfg.min_participants)
        if t.outcome is None and not expired:
            return []
        ps.decision = DecisionPayload(proposal_id=ps.proposal_id, outcome=t.outcome or "EXPIRED", yes_votes=t.yes,
                                      no_votes=t.no, quorum_basis=t.basis, threshold=t.threshold,
                                      voters=list(t.voters), decided_at=at)  # fmt: skip
        self._touch(ps)
        out: list[Output] = [DecisionOut(ps.tenant, ps.ref.trace_id, ps.decision)]
        if ps.decision.outcome == "APPROVED":
            out += self._publish_fact(ps, at)
        return out

    def _publish_fact(self, ps: ProposalState, at: int) -> list[Output]:
        p, ref = ps.proposal, ps.ref
        assert p is not None and ref is not None
        fkey = (ps.tenant, p.fact_key)
        bad = check_update(self.facts.get(fkey, 0), p.base_version)
        if bad is not None:
            ps.fact_refusal = bad.code
            return [Refusal(ref, bad.code, f"approved, but fact {p.fact_key}: {bad.detail}")]
        version = p.base_version + 1
        self.facts[fkey] = version
        self.dirty_facts.add(fkey)
        ps.fact_version = version
        fact = FactPayload(fact_key=p.fact_key, version=version, statement=p.statement, tags=p.tags,
                           proposal_id=ps.proposal_id, supersedes_version=p.base_version or None,
                           valid_from=at)  # fmt: skip
        return [FactOut(ps.tenant, ref.trace_id, fact)]
