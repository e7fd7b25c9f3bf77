"""The vote rules, pure: quorum over active claws, one vote per claw, one decision, fact versions."""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from contracts.models import Envelope
from governance.votes.fact_versions import check_update, check_version
from governance.votes.quorum import Heartbeat, Presence, active_claws, majority, tally
from governance.votes.voting import (
    DecisionOut,
    FactOut,
    GovernanceState,
    Output,
    ProposalState,
    Ref,
    Refusal,
    VotingConfig,
)
from tests.helpers import offline_client

W = 10_000
CFG = VotingConfig(presence_window_ms=W, expiry_grace_ms=1_000, pending_limit_ms=5_000)
_offsets = {"n": 0}


def feed(gs: GovernanceState, claw: str, kind: str, payload: dict[str, Any], t: int) -> list[Output]:
    env: Envelope = offline_client("acme", claw).build(kind, payload, timestamp_ms=t)
    _offsets["n"] += 1
    return gs.apply(env, Ref.of(env, f"hivemem.accepted.{kind}", 0, _offsets["n"], t))


def beat(gs: GovernanceState, claw: str, t: int, healthy: bool = True) -> None:
    feed(gs, claw, "presence", {"status": "ACTIVE", "healthy": healthy}, t)


def propose(
    gs: GovernanceState, pid: str, t: int, key: str = "k", base: int = 0, deadline: int = 60_000
) -> list[Output]:
    body = {"proposalId": pid, "factKey": key, "statement": f"{pid} says so", "proposer": "claw-p",
            "deadline": t + deadline, "baseVersion": base}  # fmt: skip
    return feed(gs, "claw-p", "proposal", body, t)


def vote(gs: GovernanceState, claw: str, pid: str, t: int, yes: bool = True) -> list[Output]:
    return feed(gs, claw, "vote", {"proposalId": pid, "vote": "YES" if yes else "NO"}, t)


def codes(outs: list[Output]) -> list[str]:
    return [o.code if isinstance(o, Refusal) else type(o).__name__ for o in outs]


def test_majority_thresholds_from_the_seed() -> None:
    assert [majority(n) for n in (3, 4, 5, 6)] == [2, 3, 3, 4]


def test_tally_needs_three_active_claws_and_counts_only_them() -> None:
    active = frozenset({"a", "b"})
    assert tally([("a", True), ("b", True)], active).outcome is None
    t = tally([("a", True), ("b", True), ("z", False)], frozenset({"a", "b", "c"}))
    assert (t.outcome, t.basis, t.threshold, t.yes, t.no, t.voters) == ("APPROVED", 3, 2, 2, 0, ("a", "b"))


def test_active_window_is_symmetric_and_ignores_unhealthy() -> None:
    presence = {
        c: Presence.of(hb)
        for c, hb in {
            "a": Heartbeat(1000, True),
            "b": Heartbeat(1000 + W + 1, True),
            "c": Heartbeat(1000, False),
        }.items()
    }
    assert active_claws(presence, 1000, W) == {"a"}
    assert active_claws(presence, 1000 - W, W) == {"a"}  # a heartbeat logged just after counts


def test_presence_history_judges_an_instant_by_the_heartbeats_around_it() -> None:
    h = Presence.of(Heartbeat(0, True))
    for t, ok in ((W, True), (2 * W, True), (5 * W, False), (6 * W, True)):
        nxt = h.beat(Heartbeat(t, ok), W, 100 * W)
        assert nxt is not None
        h = nxt
    assert [(r.first, r.last, r.ok) for r in h.runs] == [(0, 2 * W, True), (5 * W, 5 * W, False), (6 * W, 6 * W, True)]
    assert h.beat(Heartbeat(6 * W - 1, True), W, 100 * W) is None  # older than the latest: ignored
    assert [h.ok_at(t, W) for t in (-W, -W - 1, W // 2, 3 * W, 3 * W + 1, 5 * W + 1, 6 * W + 1, 7 * W + 1)] == [
        True, False, True, True, False, False, True, False]  # fmt: skip
    # Runs that ended more than the history's span before the newest heartbeat are dropped.
    later = h.beat(Heartbeat(6 * W + 10, True), W, 4 * W)
    assert later is not None and [r.first for r in later.runs] == [5 * W, 6 * W]


def test_a_vote_read_after_much_later_heartbeats_is_judged_at_its_own_time() -> None:
    """Through a broker outage the processor can read presence far ahead of the votes (the votes'
    partition leader was down): heartbeats logged more than the window after a vote are read
    before it. The vote is judged by the heartbeats around its own log time, as in order."""
    in_order, ahead = GovernanceState(CFG), GovernanceState(CFG)
    for gs in (in_order, ahead):
        for claw in "abc":
            beat(gs, claw, 0)
        propose(gs, "p1", 50)
    for claw in "abc":
        beat(ahead, claw, 3 * W)  # read before the votes logged at 200 and 300
    assert vote(ahead, "a", "p1", 200) == []
    got = vote(ahead, "b", "p1", 300)
    assert codes(got) == ["DecisionOut", "FactOut"]
    vote(in_order, "a", "p1", 200)
    assert [o.payload for o in got] == [o.payload for o in vote(in_order, "b", "p1", 300)]  # type: ignore[union-attr]


def test_fact_version_rules() -> None:
    assert check_version(0, 1) is None and check_version(1, 2) is None
    assert [r.code for r in (check_version(2, 2), check_version(2, 1), check_version(1, 3), check_version(0, 2))
            if r] == ["FACT_DUPLICATE_VERSION", "FACT_STALE", "FACT_CONFLICT", "FACT_CONFLICT"]  # fmt: skip
    assert check_update(2, 2) is None
    assert [r.code for r in (check_update(2, 1), check_update(2, 3)) if r] == ["FACT_STALE", "FACT_CONFLICT"]


def test_three_claws_approve_and_publish_v1_then_v2() -> None:
    gs = GovernanceState(CFG)
    for c in ("a", "b", "c"):
        beat(gs, c, 1000)
    assert propose(gs, "p1", 1100) == []
    assert vote(gs, "a", "p1", 1200) == []
    out = vote(gs, "b", "p1", 1300)
    assert codes(out) == ["DecisionOut", "FactOut"]
    d, f = out[0], out[1]
    assert isinstance(d, DecisionOut) and isinstance(f, FactOut)
    assert (d.payload.outcome, d.payload.quorum_basis, d.payload.threshold) == ("APPROVED", 3, 2)
    assert (f.payload.version, f.payload.supersedes_version, f.payload.valid_from) == (1, None, 1300)
    assert codes(vote(gs, "c", "p1", 1400)) == ["PROPOSAL_CLOSED"]
    propose(gs, "p2", 2000, base=1)
    vote(gs, "a", "p2", 2100)
    f2 = vote(gs, "c", "p2", 2200)[1]
    assert isinstance(f2, FactOut) and (f2.payload.version, f2.payload.supersedes_version) == (2, 1)
    assert codes(propose(gs, "p3", 2300, base=1)) == ["FACT_STALE"]
    assert codes(propose(gs, "p4", 2300, base=3)) == ["FACT_CONFLICT"]


def test_vote_stuffing_counts_once() -> None:
    gs = GovernanceState(CFG)
    for c in ("a", "b", "c", "d", "e"):
        beat(gs, c, 1000)
    propose(gs, "p", 1000)
    outs = [vote(gs, "a", "p", 1001 + i) for i in range(10)]
    assert [codes(o) for o in outs] == [[]] + [["DUPLICATE_VOTE"]] * 9
    assert gs.proposals[("acme", "p")].ballots.keys() == {"a"}


def test_two_active_claws_never_decide_and_the_proposal_expires() -> None:
    gs = GovernanceState(CFG)
    beat(gs, "a", 1000)
    beat(gs, "b", 1000)
    beat(gs, "c", 1000 - W - 1)  # silent: outside the window
    propose(gs, "p", 1000, deadline=5000)
    assert vote(gs, "a", "p", 1100) == [] and vote(gs, "b", "p", 1200) == []
    assert gs.tick(6000 + 999) == []  # within the grace period
    out = gs.tick(7000)
    d = out[0]
    assert isinstance(d, DecisionOut)
    p = d.payload
    assert (p.outcome, p.quorum_basis, p.yes_votes, p.decided_at) == ("EXPIRED", 2, 2, 6000)
    assert gs.tick(99_000) == []


def test_vote_before_its_proposal_waits_then_counts_or_times_out() -> None:
    gs = GovernanceState(CFG)
    for c in ("a", "b", "c"):
        beat(gs, c, 1000)
    assert vote(gs, "a", "early", 1000) == [] and codes(vote(gs, "a", "early", 1001)) == ["DUPLICATE_VOTE"]
    vote(gs, "b", "early", 1002)
    assert codes(propose(gs, "early", 1003)) == ["DecisionOut", "FactOut"]
    vote(gs, "a", "never", 2000)
    assert codes(gs.tick(2000 + 5000)) == ["UNKNOWN_PROPOSAL"]


def test_state_survives_a_json_round_trip() -> None:
    gs = GovernanceState(CFG)
    propose(gs, "p", 1000)
    vote(gs, "a", "p", 1001)
    ps = gs.proposals[("acme", "p")]
    again = ProposalState.model_validate_json(ps.model_dump_json())
    assert again == ps


# --- the rules against a plain reference model ------------------------------------------------

CLAWS = ["a", "b", "c", "d", "e"]
PIDS = ["p1", "p2", "p3"]


class Reference:
    """The rules again, written as plainly as possible."""

    def __init__(self) -> None:
        self.seen: dict[str, list[tuple[int, bool]]] = {}  # every heartbeat, in the order read
        self.props: dict[str, dict[str, Any]] = {}
        self.waiting: dict[str, list[tuple[str, bool, int]]] = {}
        self.facts: dict[str, int] = {}

    def active_at(self, t: int) -> set[str]:
        """The latest heartbeat at or before ``t``, if within the window; a claw with none before ``t``: its first,
        if within the window after it."""
        active = set()
        for c, beats in self.seen.items():
            before = [(at, ok) for at, ok in beats if at <= t]
            after = [(at, ok) for at, ok in beats if t < at <= t + W]
            if (before and t - before[-1][0] <= W and before[-1][1]) or (not before and after and after[0][1]):
                active.add(c)
        return active

    def heartbeat(self, claw: str, t: int, ok: bool) -> list[str]:
        """A heartbeat can count for the votes up to the window before it: the open proposals are counted again
        at their last vote's time."""
        beats = self.seen.setdefault(claw, [])
        if beats and t < beats[-1][0]:
            return []
        beats.append((t, ok))
        out: list[str] = []
        for pid in sorted(self.props):
            p = self.props[pid]
            if not p["decided"] and p["votes"] and t <= p["last"] + W:
                out += self.count(pid, p["last"], final=False)
        return out

    def propose(self, pid: str, t: int, key: str, base: int, deadline: int) -> list[str]:
        if pid in self.props:
            return ["DUPLICATE_PROPOSAL"]
        if deadline <= t:
            return ["DEADLINE_PASSED"]
        cur = self.facts.get(key, 0)
        if base != cur:
            return ["FACT_STALE" if base < cur else "FACT_CONFLICT"]
        self.props[pid] = {"deadline": deadline, "key": key, "base": base, "votes": {}, "decided": None}
        out: list[str] = []
        for claw, yes, vt in sorted(self.waiting.pop(pid, []), key=lambda w: w[2]):
            out += self.vote(claw, pid, vt, yes)
        return out

    def vote(self, claw: str, pid: str, t: int, yes: bool) -> list[str]:
        if pid not in self.props:
            if any(w[0] == claw for w in self.waiting.get(pid, [])):
                return ["DUPLICATE_VOTE"]
            self.waiting.setdefault(pid, []).append((claw, yes, t))
            return []
        p = self.props[pid]
        if p["decided"]:
            return ["PROPOSAL_CLOSED"]
        if claw in p["votes"]:
            return ["DUPLICATE_VOTE"]
        if t > p["deadline"]:
            return ["VOTE_AFTER_DEADLINE"]
        p["votes"][claw] = yes
        p["last"] = max(p.get("last", t), t)
        return self.count(pid, t, final=False)

    def count(self, pid: str, t: int, final: bool) -> list[str]:
        p = self.props[pid]
        active = self.active_at(t)
        yes = len([c for c, v in p["votes"].items() if v and c in active])
        no = len([c for c, v in p["votes"].items() if not v and c in active])
        need = max(len(active), 3) // 2 + 1
        if len(active) >= 3 and yes >= need:
            outcome = "APPROVED"
        elif len(active) >= 3 and no >= need:
            outcome = "REJECTED"
        elif final:
            outcome = "EXPIRED"
        else:
            return []
        p["decided"] = outcome
        if outcome != "APPROVED":
            return [outcome]
        if self.facts.get(p["key"], 0) != p["base"]:
            return [outcome, "FACT_STALE"]
        self.facts[p["key"]] = p["base"] + 1
        return [outcome, f"v{p['base'] + 1}"]

    def tick(self, now: int) -> list[str]:
        out: list[str] = []
        for pid in sorted(set(self.props) | set(self.waiting)):
            p = self.props.get(pid)
            if p is not None and not p["decided"] and now >= p["deadline"] + 1000:
                out += self.count(pid, p["deadline"], final=True)
            elif p is None and self.waiting.get(pid) and now >= self.waiting[pid][0][2] + 5000:
                out += ["UNKNOWN_PROPOSAL"] * len(self.waiting.pop(pid))
        return out


def summary(outs: list[Output]) -> list[str]:
    res: list[str] = []
    for o in outs:
        if isinstance(o, Refusal):
            res.append(o.code)
        elif isinstance(o, DecisionOut):
            res.append(o.payload.outcome)
        else:
            res.append(f"v{o.payload.version}")
    return res


class VotingMachine(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.gs = GovernanceState(CFG)
        self.ref = Reference()
        self.t = 1_000_000

    def _advance(self, dt: int) -> int:
        self.t += dt
        return self.t

    @rule(claw=st.sampled_from(CLAWS), ok=st.booleans(), dt=st.integers(0, 4000))
    def heartbeat(self, claw: str, ok: bool, dt: int) -> None:
        t = self._advance(dt)
        got = summary(feed(self.gs, claw, "presence", {"status": "ACTIVE", "healthy": ok}, t))
        assert got == self.ref.heartbeat(claw, t, ok)

    @rule(pid=st.sampled_from(PIDS), key=st.sampled_from(["k1", "k2"]), base=st.integers(0, 2),
          deadline=st.integers(-100, 20_000), dt=st.integers(0, 2000))  # fmt: skip
    def propose(self, pid: str, key: str, base: int, deadline: int, dt: int) -> None:
        t = self._advance(dt)
        got = summary(propose(self.gs, pid, t, key=key, base=base, deadline=deadline))
        assert got == self.ref.propose(pid, t, key, base, t + deadline)

    @rule(claw=st.sampled_from(CLAWS), pid=st.sampled_from(PIDS), yes=st.booleans(), dt=st.integers(0, 2000))
    def vote(self, claw: str, pid: str, yes: bool, dt: int) -> None:
        t = self._advance(dt)
        assert summary(vote(self.gs, claw, pid, t, yes)) == self.ref.vote(claw, pid, t, yes)

    @rule(dt=st.integers(0, 15_000))
    def tick(self, dt: int) -> None:
        t = self._advance(dt)
        assert summary(self.gs.tick(t)) == self.ref.tick(t)

    @rule()
    def restart(self) -> None:
        """The processor restarts: its state is read back from storage (JSON), its due times rebuilt."""
        gs = GovernanceState(CFG)
        for ps in self.gs.proposals.values():
            gs.restore_proposal(ProposalState.model_validate_json(ps.model_dump_json()))
        for tenant, claws in self.gs.presence.items():
            for claw, hb in claws.items():
                gs.restore_presence(tenant, claw, hb)
        for (tenant, key), version in self.gs.facts.items():
            gs.restore_fact(tenant, key, version)
        self.gs = gs

    @invariant()
    def one_decision_and_contiguous_versions(self) -> None:
        for (_, pid), ps in self.gs.proposals.items():
            ref = self.ref.props.get(pid)
            assert (ps.decision.outcome if ps.decision else None) == (ref["decided"] if ref else None)
        assert {k: v for (_, k), v in self.gs.facts.items()} == self.ref.facts


TestVotingMachine = VotingMachine.TestCase
TestVotingMachine.settings = settings(max_examples=100, stateful_step_count=40, deadline=None)


def test_a_heartbeat_read_after_a_later_vote_retallies_as_if_read_in_order() -> None:
    """Presence and votes come on different topics: c's heartbeat (logged at 100) can be read after
    the votes logged at 200 and 300. The verdict must be the in-order one, at the last vote's time."""
    in_order, late = GovernanceState(CFG), GovernanceState(CFG)
    for gs in (in_order, late):
        beat(gs, "a", 0)
        beat(gs, "b", 0)
        propose(gs, "p1", 50)
    beat(in_order, "c", 100)
    assert codes(vote(in_order, "a", "p1", 200)) == []
    expected = vote(in_order, "b", "p1", 300)
    assert codes(expected) == ["DecisionOut", "FactOut"]

    assert vote(late, "a", "p1", 200) == [] and vote(late, "b", "p1", 300) == []  # basis 2 < 3: no decision
    env = offline_client("acme", "c").build("presence", {"status": "ACTIVE", "healthy": True}, timestamp_ms=100)
    got = late.apply(env, Ref.of(env, "hivemem.accepted.presence", 0, 999, 100))
    assert [o.payload for o in got] == [o.payload for o in expected]  # type: ignore[union-attr]  # same decidedAt, fact
    assert isinstance(got[0], DecisionOut) and (got[0].payload.decided_at, got[0].payload.quorum_basis) == (300, 3)


def test_a_heartbeat_logged_more_than_the_window_after_the_last_vote_decides_nothing() -> None:
    gs = GovernanceState(CFG)
    beat(gs, "a", 0)
    beat(gs, "b", 0)
    propose(gs, "p1", 50)
    vote(gs, "a", "p1", 200)
    vote(gs, "b", "p1", 300)
    at = 300 + W + 1
    env = offline_client("acme", "c").build("presence", {"status": "ACTIVE", "healthy": True}, timestamp_ms=at)
    assert gs.apply(env, Ref.of(env, "hivemem.accepted.presence", 0, 1000, at)) == []
    assert gs.proposals[("acme", "p1")].decision is None


def test_first_heartbeats_logged_just_after_the_votes_and_read_after_them_decide() -> None:
    """Claws that start and vote at once: their votes (and the proposal) are logged, and read, before their first
    heartbeats, logged a moment later. A claw with no heartbeat before a vote counts by its first one after it
    within the window, so those heartbeats, when read, decide the proposal at its last vote's time."""
    gs = GovernanceState(CFG)
    propose(gs, "p1", 50)
    assert vote(gs, "a", "p1", 100) == [] and vote(gs, "b", "p1", 100) == [] and vote(gs, "c", "p1", 100) == []
    beat(gs, "a", 400)
    beat(gs, "b", 400)
    env = offline_client("acme", "c").build("presence", {"status": "ACTIVE", "healthy": True}, timestamp_ms=900)
    got = gs.apply(env, Ref.of(env, "hivemem.accepted.presence", 0, 1000, 900))
    assert codes(got) == ["DecisionOut", "FactOut"]
    assert isinstance(got[0], DecisionOut) and (got[0].payload.decided_at, got[0].payload.quorum_basis) == (100, 3)
