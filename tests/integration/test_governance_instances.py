"""The governance processor split over two instances by Kafka's consumer group, one SIGKILLed mid-stream.

Two governance processes (``HIVEMEM_INSTANCE`` 0 and 1) form one consumer group with Kafka's range assignor;
the gate writes each tenant's presence, proposals and votes to the tenant's partition, so each instance owns
whole tenants. Three tenants (partitions 0, 1 and 2) vote on proposals; instance 1, the owner of partition 2,
is SIGKILLed a third of the way through, instance 0 takes partition 2 over with its state as instance 1
committed it, and instance 1 comes back later. Then: every proposal is decided once and approved, with one
fact; both instances decided some, and instance 0 decided proposals whose earlier votes instance 1 had counted;
nothing was refused; the decisions and facts in the log are byte for byte what one unsplit processor gives
for the same accepted log; and the read models equal a clean replay.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from contracts.avro import decode_envelope
from contracts.models import DecisionPayload
from contracts.positions import LogPosition
from contracts.topics import tenant_partition
from hivemem.demo import claw_client
from hivemem.services import projections
from hivemem.stack import Stack
from processors.votes.core import INPUT_TYPES, GovernanceProcessor
from processors.votes.store import InMemoryGovernanceStore
from producers.claw_client import producer_config
from projections.replay import rebuild
from streams.kafka import read_topics
from streams.records import LogRecord
from tests.conftest import wait_until
from tests.integration.split_support import assigned, sender, split_stack
from tests.integration.support import count, owner_db

pytestmark = pytest.mark.integration

TENANTS = ("initech", "soylent", "acme")  # partitions 0, 1, 2: instance 0 holds 0-1, instance 1 holds 2
CLAWS = 5
ROUNDS = 90  # proposals per tenant, each with 3 YES votes of 5 active claws: approved at the third
RATE = 150  # envelopes/s
READ_MODELS = ("audit", "claws", "governance")
NAME = "governance-processor"


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    assert sorted(tenant_partition(t) for t in TENANTS) == [0, 1, 2]
    services: dict[str, tuple[list[str], str | None]] = {
        "gate": (["gate"], None), "governance-0": (["governance"], "0"), "governance-1": (["governance"], "1"),
        "projectors": (["projectors", *READ_MODELS], None)}  # fmt: skip
    # Presence is valid for the whole test (it lasts 20-60 s, pauses included), and every claw's first heartbeat
    # is logged before any vote (_plan): which claws are active at a vote then never depends on whether a
    # heartbeat logged next to it is read before or after it (the state keeps each claw's latest heartbeat only;
    # one logged after a tenant's last vote re-tallies nothing), so the log alone decides every verdict and the
    # split can be checked against one unsplit processor byte for byte.
    with split_stack(Path(tmp_path_factory.mktemp("hm-gov-split")), TENANTS, services, presence_window_s=3600) as st:
        yield st


def _plan(trace: str) -> list[tuple[str, int, str, dict[str, Any]]]:
    """(tenant, claw, type, payload): every claw's presence (``PRESENCE`` records, sent and acknowledged before the
    rest), then each tenant's rounds interleaved, presence renewed every 60 envelopes."""
    deadline = int((time.time() + 900) * 1000)
    plan = [(t, c, "presence", {"status": "ACTIVE", "healthy": True}) for t in TENANTS for c in range(CLAWS)]
    for k in range(ROUNDS):
        for t in TENANTS:
            pid = f"{trace}-{t}-{k}"
            plan.append((t, 0, "proposal", {"proposalId": pid, "factKey": f"{trace}/{k}", "statement": f"fact {k}",
                                            "proposer": "claw-0", "deadline": deadline, "baseVersion": 0}))  # fmt: skip
            plan += [(t, v, "vote", {"proposalId": pid, "vote": "YES", "reason": "seen it"}) for v in (1, 2, 3)]
            if len(plan) % 60 < 4:
                plan += [(t2, c, "presence", {"status": "ACTIVE", "healthy": True}) for t2 in TENANTS
                         for c in range(CLAWS)]  # fmt: skip
    return plan


def _assigned(stack: Stack, i: int) -> list[tuple[str, int]]:
    return assigned(stack, f"governance-{i}", f"{NAME}@{i}")


def _decisions(stack: Stack) -> list[LogRecord]:
    return read_topics(stack.settings.require_kafka(), [stack.settings.topics.inbound("decision")])


def test_two_governance_instances_split_the_tenants_and_survive_a_sigkill(split: Stack) -> None:
    s = split.settings
    bootstrap, names = s.require_kafka(), s.topics
    gov0, gov1 = split.services["governance-0"], split.services["governance-1"]
    wait_until(lambda: _assigned(split, 0) and _assigned(split, 1), timeout=90, interval=0.5,
               what="both governance instances assigned partitions")  # fmt: skip
    # Range: the same partition numbers of the three input topics each; instance 1 has partition 2.
    assert {p for _, p in _assigned(split, 1)} == {2} and {p for _, p in _assigned(split, 0)} == {0, 1}

    trace = f"gsplit-{uuid.uuid4().hex[:8]}"
    plan = _plan(trace)
    kill_at, restart_at = len(plan) // 3, 2 * len(plan) // 3
    first = len(TENANTS) * CLAWS  # the first heartbeats, logged before any vote
    producer = Producer(producer_config(bootstrap))
    claws = {(t, c): claw_client(s, t, f"claw-{c}", producer) for t in TENANTS for c in range(CLAWS)}
    acked: list[LogPosition] = []
    errors: list[str] = []

    def on_done(pos: LogPosition | None, err: str | None) -> None:
        (acked.append(pos) if pos is not None else errors.append(str(err)))  # type: ignore[func-returns-value]

    at_kill, restarted = threading.Event(), threading.Event()

    def publish() -> None:
        start = time.monotonic()
        for i, (tenant, claw, kind, payload) in enumerate(plan):
            if i == kill_at:
                at_kill.set()
            if i == restart_at:
                while not restarted.wait(0.1):
                    producer.poll(0)
            c = claws[(tenant, claw)]
            c.publish_envelope_async(c.build(kind, payload, trace_id=trace), on_done)
            if i == first - 1:
                assert producer.flush(30) == 0
            if i % 20 == 0:
                time.sleep(max(0.0, start + i / RATE - time.monotonic()))
        assert producer.flush(60) == 0

    publisher = threading.Thread(target=publish, daemon=True)
    publisher.start()
    assert at_kill.wait(60)
    gov1.kill()  # SIGKILL, mid-stream
    try:
        # Instance 0 alone, with partition 2 (acme) once instance 1's session times out (6 s), deciding acme's.
        wait_until(lambda: len(_assigned(split, 0)) == 3 * len(INPUT_TYPES) and
                   _owners(split, "acme").get(f"{NAME}@0", 0) >= 5, timeout=60, interval=0.5,
                   what="instance 0 deciding acme's proposals")  # fmt: skip
    finally:
        if not gov1.alive():
            gov1.start()
        restarted.set()
    publisher.join()
    assert errors == [] and len(acked) == len(plan)

    proposals = ROUNDS * len(TENANTS)
    facts = "SELECT count(*) FROM governance.facts WHERE fact_key LIKE %s"
    wait_until(lambda: count(split, facts, f"{trace}/%") >= proposals, timeout=120, interval=1, what="the facts")
    assert gov0.alive() and gov1.alive()

    decisions = [r for r in _decisions(split) if decode_envelope(r.value or b"").trace_id == trace]
    payloads = [decode_envelope(r.value or b"").payload for r in decisions]
    assert all(isinstance(p, DecisionPayload) and p.outcome == "APPROVED" for p in payloads)
    assert Counter(p.proposal_id for p in payloads if isinstance(p, DecisionPayload)) == Counter(
        {f"{trace}-{t}-{k}": 1 for t in TENANTS for k in range(ROUNDS)}
    )  # one decision each, sent once
    by_owner = Counter(sender(r) for r in decisions)
    assert set(by_owner) == {f"{NAME}@0", f"{NAME}@1"}, by_owner
    with owner_db(split) as conn:
        refused = conn.execute("SELECT count(*) FROM audit.events WHERE trace_id = %s AND outcome <> 'ACCEPTED'",
                               (trace,)).fetchone()  # fmt: skip
    assert refused == (0,)

    # The log's decisions and facts are the ones one unsplit processor gives for the accepted log, in log order.
    accepted = read_topics(bootstrap, [names.accepted(t) for t in INPUT_TYPES])
    accepted.sort(key=lambda r: (r.log_time(), r.topic, r.partition, r.offset))
    one = GovernanceProcessor(s.voting(), names, s.load_config().system_signer(), InMemoryGovernanceStore())
    expected = [o for r in accepted for o in one.process([r], 0) if o.topic != names.rejected]
    logged = read_topics(bootstrap, [names.inbound("decision"), names.inbound("fact")])
    want = Counter((o.key or b"", o.value or b"") for o in expected)
    got = Counter((r.key or b"", r.value or b"") for r in logged)
    assert want == got, (f"missing {sorted((k, n) for (k, _), n in (want - got).items())[:10]}, "
                         f"extra {sorted((k, n) for (k, _), n in (got - want).items())[:10]}")  # fmt: skip

    models = projections(s)
    for name in READ_MODELS:
        assert rebuild(models[name], bootstrap, s.require_database(), names).equal, name


def _owners(stack: Stack, tenant: str) -> Counter[str]:
    return Counter(sender(r) for r in _decisions(stack) if decode_envelope(r.value or b"").tenant == tenant)
