"""The governance processor split over two instances (``GovernanceProcessor.hold``), without a broker: the
instances share one store, each owns the tenants of the partitions it holds, and partitions move between them
at random points of a random interleaving. Whatever the split, the outputs are the ones one unsplit processor
gives for the same log: the same decisions, facts and refusals, byte for byte, each once."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.avro import encode_envelope
from contracts.topics import DEFAULT_PARTITIONS, TopicNames, partition_key, tenant_partition
from governance.signing import HmacSigner
from governance.votes.voting import VotingConfig
from processors.votes.core import INPUT_TYPES, GovernanceProcessor
from processors.votes.store import InMemoryGovernanceStore
from streams.records import LogRecord, OutRecord
from tests.helpers import offline_client

NAMES = TopicNames()
SIGNER = HmacSigner("hmac:hivemem-system", b"k" * 32)
CFG = VotingConfig(presence_window_ms=600_000, expiry_grace_ms=1_000, pending_limit_ms=5_000)
TENANTS = ("initech", "globex", "acme", "umbrella", "soylent", "t0")  # partitions 0, 1, 2, 0, 1, 2
END = 10**13  # a tick long after every deadline: expiries and give-ups, in every setup alike


Step = tuple[str, str, str, dict[str, object]]  # (tenant, claw, type, payload)


def _log(rng: random.Random) -> list[LogRecord]:
    """A log of the accepted governance topics: for each tenant, presence of 3-5 claws, then proposals (one a
    stale base version, one with a deadline that passes, the first approved by all), votes (duplicates, a vote
    before its proposal, a vote on a proposal that never comes), interleaved across tenants as the gate would
    write them (each tenant's records on its own partition, in order)."""
    per_tenant: list[list[Step]] = []
    for tenant in TENANTS:
        claws = [f"c{i}" for i in range(rng.randint(3, 5))]
        plan: list[Step] = [(tenant, c, "presence", {"status": "ACTIVE", "healthy": True}) for c in claws]
        for k in range(rng.randint(2, 4)):
            pid = f"{tenant}-p{k}"
            body: dict[str, object] = {"proposalId": pid, "factKey": f"key{k % 2}", "statement": f"{pid} holds",
                                       "proposer": claws[0], "deadline": 50_000 if k == 1 else END - 5_000,
                                       "baseVersion": 0}  # fmt: skip
            voters = claws if k == 0 else rng.sample(claws, rng.randint(1, len(claws)))  # the first is approved
            votes: list[Step] = [(tenant, c, "vote", {"proposalId": pid, "vote": "YES" if k == 0 else
                                                      rng.choice(("YES", "NO"))}) for c in voters]  # fmt: skip
            if rng.random() < 0.3:
                votes.append(votes[0])  # a duplicate
            proposal: Step = (tenant, claws[0], "proposal", body)
            plan += [*votes[:1], proposal, *votes[1:]] if rng.random() < 0.3 else [proposal, *votes]  # early vote
        plan.append((tenant, claws[-1], "vote", {"proposalId": f"{tenant}-never", "vote": "YES"}))
        per_tenant.append(plan)
    order = [i for i, plan in enumerate(per_tenant) for _ in plan]
    rng.shuffle(order)  # across tenants any interleaving; within a tenant the plan's order
    cursors, offsets, out = [0] * len(per_tenant), Counter[tuple[str, int]](), []
    for at, i in enumerate(order):
        tenant, claw, kind, body = per_tenant[i][cursors[i]]
        cursors[i] += 1
        t = 1_000 + at * 10
        env = offline_client("acme", claw).build(kind, body, timestamp_ms=t).model_copy(update={"tenant": tenant})
        topic, part = NAMES.accepted(kind), tenant_partition(tenant)
        out.append(LogRecord(topic, part, offsets[(topic, part)], t, partition_key(tenant, env.aggregate),
                             encode_envelope(env)))  # fmt: skip
        offsets[(topic, part)] += 1
    return out


def _held(parts: Sequence[int]) -> frozenset[tuple[str, int]]:
    return frozenset((NAMES.accepted(t), p) for t in INPUT_TYPES for p in parts)


def _outputs(outs: list[OutRecord]) -> Counter[tuple[str, int, bytes, bytes]]:
    return Counter((o.topic, o.partition, o.key or b"", o.value or b"") for o in outs)


def _unsplit(log: list[LogRecord], batch: int) -> list[OutRecord]:
    one = GovernanceProcessor(CFG, NAMES, SIGNER, InMemoryGovernanceStore())
    outs: list[OutRecord] = []
    for i in range(0, len(log), batch):
        outs += one.process(log[i : i + batch], 0)
    return outs + one.process([], END)


@settings(max_examples=30, deadline=None)
@given(st.randoms(use_true_random=False), st.integers(1, 12))
def test_a_split_gives_the_unsplit_outputs_whatever_moves_when(rng: random.Random, batch: int) -> None:
    log = _log(rng)
    store = InMemoryGovernanceStore()
    a, b = (GovernanceProcessor(CFG, NAMES, SIGNER, store) for _ in range(2))
    parts = list(range(DEFAULT_PARTITIONS))
    outs: list[OutRecord] = []
    pending = list(log)
    while pending:
        # A rebalance between batches: each partition to one instance, at random (sometimes all to one).
        mine = [p for p in parts if rng.random() < 0.5]
        a.hold(_held(mine))
        b.hold(_held([p for p in parts if p not in mine]))
        for _ in range(rng.randint(1, 4)):
            take, pending = pending[:batch], pending[batch:]
            for proc, owned in ((a, mine), (b, [p for p in parts if p not in mine])):
                outs += proc.process([r for r in take if r.partition in owned], 0)
    a.hold(_held(parts))
    b.hold(_held([]))
    outs += a.process([], END) + b.process([], END)
    assert _outputs(outs) == _outputs(_unsplit(log, batch))
    assert any(o.topic == NAMES.inbound("fact") for o in outs)  # the log decides something


def test_an_instance_loads_and_ticks_only_the_tenants_it_owns() -> None:
    store = InMemoryGovernanceStore()
    one = GovernanceProcessor(CFG, NAMES, SIGNER, store)
    log = _log(random.Random(3))
    one.process(log, 0)
    owner = GovernanceProcessor(CFG, NAMES, SIGNER, store)
    owner.hold(_held([0]))
    assert {t for t, _ in owner.state.proposals} == {t for t in TENANTS if tenant_partition(t) == 0}
    expired = owner.process([], END)
    assert expired and all(tenant_partition(o.key.decode().split("/", 1)[0]) == 0 for o in expired if o.key)
    # Holding partition 1 of one input topic only (a misconfigured group) owns no tenant of partition 1.
    owner.hold(frozenset({(NAMES.accepted("vote"), 1)}))
    assert owner.owned == frozenset() and owner.state.proposals == {}
