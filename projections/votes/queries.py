"""Reads of the governance read model: one proposal with its votes and tally, facts by key."""

from __future__ import annotations

import time
from typing import Any, Literal

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from governance.votes.quorum import Heartbeat, Presence, active_claws, tally
from projections.queries import tenant_tx

VoteStatus = Literal["COUNTED", "NOT_IN_BASIS", "RECEIVED", "REFUSED"]
ProposalStatus = Literal["OPEN", "APPROVED", "REJECTED", "EXPIRED", "REFUSED"]


class View(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class VoteView(View):
    claw_id: str
    instance_id: str | None
    vote: str | None
    reason: str | None
    event_id: str | None
    log_time: int
    # COUNTED: in the tally; NOT_IN_BASIS: the claw was not active when counted;
    # RECEIVED: not decided yet; REFUSED: see reason_code and stage.
    status: VoteStatus
    reason_code: str | None = None
    stage: str | None = None


class TallyView(View):
    yes: int
    no: int
    quorum_basis: int
    threshold: int
    live: bool  # computed now from presence (open proposal), or frozen in the decision
    computed_at: int  # ms since the epoch: now for a live tally, the decision's time for a frozen one
    basis: str  # which basis these numbers are, in words (LIVE_BASIS / DECIDED_BASIS)


class DecisionView(View):
    event_id: str
    outcome: str
    yes_votes: int
    no_votes: int
    quorum_basis: int
    threshold: int
    voters: list[str]
    decided_at: int


class FactVersion(View):
    fact_key: str
    version: int
    statement: str
    tags: list[str]
    proposal_id: str | None
    supersedes_version: int | None
    valid_from: int
    valid_to: int | None
    event_id: str
    trace_id: str


class ProposalView(View):
    proposal_id: str
    fact_key: str
    statement: str
    tags: list[str]
    proposer: str
    claw_id: str
    deadline: int
    base_version: int
    trace_id: str
    status: ProposalStatus
    refusal: str | None = None
    votes: list[VoteView]
    tally: TallyView
    decision: DecisionView | None
    fact: FactVersion | None
    fact_refusal: str | None = None


class FactView(View):
    fact_key: str
    current: FactVersion
    history: list[FactVersion]  # newest first; each supersedes the next


_FACT_COLS = ("fact_key, version, statement, tags, proposal_id, supersedes_version, valid_from, valid_to, event_id, "
              "trace_id")  # fmt: skip


def _fact(row: Any) -> FactVersion:
    return FactVersion(**dict(zip(FactVersion.model_fields, row, strict=True)))


async def _all(conn: AsyncConnection[tuple[object, ...]], query: str, args: tuple[object, ...]) -> list[Any]:
    return await (await conn.execute(query, args)).fetchall()  # type: ignore[arg-type]


def _vote_views(votes: list[Any], refused_by_gate: list[Any], decision: DecisionView | None) -> list[VoteView]:
    counted = set(decision.voters) if decision else set()
    out: list[VoteView] = []
    for claw, instance, vote, reason, event_id, log_time, code, stage in votes:
        status: VoteStatus = "REFUSED" if code else "RECEIVED" if decision is None else (
            "COUNTED" if claw in counted else "NOT_IN_BASIS")  # fmt: skip
        out.append(VoteView(claw_id=claw, instance_id=instance, vote=vote, reason=reason, event_id=event_id,
                            log_time=log_time, status=status, reason_code=code, stage=stage))  # fmt: skip
    for claw, event_id, code, stage, log_time in refused_by_gate:
        out.append(VoteView(claw_id=claw or "?", instance_id=None, vote=None, reason=None, event_id=event_id,
                            log_time=log_time, status="REFUSED", reason_code=code, stage=stage))  # fmt: skip
    return out


LIVE_BASIS = (
    "live: the claws active now; nothing is decided from it. The proposal is decided when a vote "
    "arrives or the deadline passes, with the basis of that moment in the log"
)
DECIDED_BASIS = "decided: the basis and threshold the decision was made with, frozen"


async def get_proposal(pool: AsyncConnectionPool, tenant: str, proposal_id: str, window_ms: int) -> ProposalView | None:
    """One proposal as a reader needs it; ``window_ms`` is the presence window of the live tally."""
    pid = (proposal_id,)
    async with tenant_tx(pool, tenant) as conn:
        found = await _all(
            conn,
            "SELECT proposal_id, fact_key, statement, tags, proposer, claw_id, deadline, "
            "base_version, trace_id, event_id FROM governance.proposals WHERE proposal_id = %s",
            pid,
        )
        if not found:
            return None
        p = found[0]
        votes = await _all(
            conn,
            "SELECT v.claw_id, v.instance_id, v.vote, v.reason, v.event_id, v.log_time, "
            "r.reason_code, r.stage FROM governance.votes v LEFT JOIN governance.refusals r "
            "ON r.envelope_event_id = v.event_id AND r.stage = 'governance' "
            "WHERE v.proposal_id = %s ORDER BY v.log_time, v.source",
            pid,
        )
        by_gate = await _all(
            conn,
            "SELECT claw_id, envelope_event_id, reason_code, stage, log_time "
            "FROM governance.refusals WHERE proposal_id = %s AND type = 'vote' "
            "AND stage <> 'governance' ORDER BY log_time",
            pid,
        )
        refused = await _all(
            conn,
            "SELECT reason_code FROM governance.refusals WHERE envelope_event_id = %s "
            "AND type = 'proposal' AND stage = 'governance'",
            (p[9],),
        )
        d = await _all(
            conn,
            "SELECT event_id, outcome, yes_votes, no_votes, quorum_basis, threshold, voters, "
            "decided_at FROM governance.decisions WHERE proposal_id = %s",
            pid,
        )
        f = await _all(conn, f"SELECT {_FACT_COLS} FROM governance.facts WHERE proposal_id = %s", pid)
        presence = await _all(
            conn,
            "SELECT claw_id, last_seen, status = 'ACTIVE' AND coalesce(healthy, false) "
            "FROM claws.claws WHERE last_seen IS NOT NULL",
            (),
        )
    decision = DecisionView(**dict(zip(DecisionView.model_fields, d[0], strict=True))) if d else None
    vote_views = _vote_views(votes, by_gate, decision)
    if decision is not None:
        t = TallyView(yes=decision.yes_votes, no=decision.no_votes, quorum_basis=decision.quorum_basis,
                      threshold=decision.threshold, live=False, computed_at=decision.decided_at,
                      basis=DECIDED_BASIS)  # fmt: skip
    else:
        now = int(time.time() * 1000)
        active = active_claws(
            {str(c): Presence.of(Heartbeat(int(ls), bool(ok))) for c, ls, ok in presence}, now, window_ms
        )
        live = tally([(v.claw_id, v.vote == "YES") for v in vote_views if v.status == "RECEIVED"], active)
        t = TallyView(yes=live.yes, no=live.no, quorum_basis=live.basis, threshold=live.threshold, live=True,
                      computed_at=now, basis=LIVE_BASIS)  # fmt: skip
    refusal = str(refused[0][0]) if refused else None
    status: ProposalStatus = decision.outcome if decision else ("REFUSED" if refusal else "OPEN")  # type: ignore[assignment]
    return ProposalView(proposal_id=p[0], fact_key=p[1], statement=p[2], tags=list(p[3]), proposer=p[4],
                        claw_id=p[5], deadline=p[6], base_version=p[7], trace_id=p[8], status=status,
                        refusal=refusal if decision is None else None, votes=vote_views, tally=t, decision=decision,
                        fact=_fact(f[0]) if f else None,
                        fact_refusal=refusal if decision is not None else None)  # fmt: skip


async def get_fact(pool: AsyncConnectionPool, tenant: str, fact_key: str) -> FactView | None:
    async with tenant_tx(pool, tenant) as conn:
        rows: list[Any] = await (await conn.execute(
            f"SELECT {_FACT_COLS} FROM governance.facts WHERE fact_key = %s ORDER BY version DESC",
            (fact_key,))).fetchall()  # fmt: skip
    if not rows:
        return None
    history = [_fact(r) for r in rows]
    return FactView(fact_key=fact_key, current=history[0], history=history)


async def fact_as_of(pool: AsyncConnectionPool, tenant: str, fact_key: str, at: int) -> FactVersion | None:
    """The version valid at ``at`` (ms): valid_from <= at < valid_to."""
    async with tenant_tx(pool, tenant) as conn:
        row: Any = await (await conn.execute(
            f"SELECT {_FACT_COLS} FROM governance.facts WHERE fact_key = %s AND valid_from <= %s "
            "AND (valid_to IS NULL OR valid_to > %s) ORDER BY version DESC LIMIT 1",
            (fact_key, at, at))).fetchone()  # fmt: skip
    return _fact(row) if row else None
