"""Helpers for the knowledge-pool tests: claws of one tenant, proposals, votes, decisions."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
from confluent_kafka import Consumer, Producer, TopicPartition

from contracts.avro import decode_envelope
from contracts.models import DecisionPayload
from hivemem.demo import claw_client
from hivemem.stack import Stack
from producers.claw_client import ClawClient, ConsistencyToken, producer_config
from tests.conftest import wait_until


def fleet(stack: Stack, tenant: str, names: list[str], shared: bool = False) -> dict[str, ClawClient]:
    """Claws of one tenant; ``shared`` gives them one Kafka producer (for large fleets)."""
    producer = Producer(producer_config(stack.settings.require_kafka())) if shared else None
    return {name: claw_client(stack.settings, tenant, name, producer) for name in names}


def beat_all(claws: dict[str, ClawClient]) -> None:
    for c in claws.values():
        c.publish_envelope_async(c.build("presence", {"status": "ACTIVE", "healthy": True}), lambda t, e: None)
    for c in claws.values():
        assert c.flush(30) == 0


def propose(c: ClawClient, pid: str, fact_key: str, statement: str, *, base: int = 0, deadline_s: float = 60,
            trace: str | None = None) -> ConsistencyToken:  # fmt: skip
    body = {"proposalId": pid, "factKey": fact_key, "statement": statement, "tags": ["incident"],
            "proposer": c.claw_id, "deadline": int((time.time() + deadline_s) * 1000), "baseVersion": base}  # fmt: skip
    return c.publish("proposal", body, trace_id=trace or pid)


def vote(c: ClawClient, pid: str, yes: bool = True, trace: str | None = None, **kw: Any) -> ConsistencyToken:
    return c.publish("vote", {"proposalId": pid, "vote": "YES" if yes else "NO", "reason": "seen it"},
                     trace_id=trace or pid, **kw)  # fmt: skip


def proposal(h: httpx.Client, pid: str) -> dict[str, Any]:
    """The proposal's view, once the read model has it."""
    r = wait_until(lambda: (r := h.get(f"/api/v1/proposals/{pid}")).status_code != 404 and r, 30, what=pid)
    assert r.status_code == 200, r.text
    return dict(r.json())


def decided(h: httpx.Client, pid: str, timeout: float = 60) -> dict[str, Any]:
    def ready() -> dict[str, Any] | None:
        r = h.get(f"/api/v1/proposals/{pid}")
        if r.status_code != 200 or r.json()["decision"] is None:
            return None
        # An approval's fact reaches its read model on its own topic, maybe a moment later.
        view: dict[str, Any] = r.json()
        return view if view["status"] != "APPROVED" or view.get("fact") else None

    return dict(wait_until(ready, timeout, what=f"a decision on {pid}"))


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def decisions_in_log(stack: Stack, tenant: str) -> dict[str, list[tuple[str, DecisionPayload]]]:
    """Every decision record on the decision topic for ``tenant``: proposal -> [(eventId, payload)]."""
    bootstrap, topic = stack.settings.require_kafka(), stack.settings.topics.inbound("decision")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("scan"), "enable.auto.commit": False})
    out: dict[str, list[tuple[str, DecisionPayload]]] = {}
    try:
        parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts}
        todo = {p for p, e in ends.items() if e > 0}
        consumer.assign([TopicPartition(topic, p, 0) for p in todo])
        while todo:
            for m in consumer.consume(500, timeout=1):
                if m.error() is not None:
                    continue
                env = decode_envelope(m.value() or b"")
                if env.tenant == tenant:
                    assert isinstance(env.payload, DecisionPayload)
                    out.setdefault(env.payload.proposal_id, []).append((env.event_id, env.payload))
                part, off = int(m.partition() or 0), int(m.offset() or 0)
                if off + 1 >= ends[part]:
                    todo.discard(part)
    finally:
        consumer.close()
    return out


def mixed_stream(
    trace: str, n: int, proposals: int, claws: int, first: int, every: int
) -> list[tuple[int, str, dict[str, Any]]]:
    """(claw, type, payload) for each of ``n`` envelopes: presence and capabilities from every claw, and
    ``proposals`` proposals by claw 0 (at ``first``, then every ``every`` records) each followed by YES
    votes of claws 1-3, so a fault test can check the governance outcome as well as each verdict."""
    deadline = int((time.time() + 600) * 1000)
    plan: list[tuple[int, str, dict[str, Any]]] = [
        (i % claws, "presence", {"status": "ACTIVE"})
        if i % 2
        else (i % claws, "capabilities", {"capabilities": [f"c{i}"]})
        for i in range(n)
    ]
    for k in range(proposals):
        at, pid = first + k * every, f"p-{trace}-{k}"
        plan[at] = (0, "proposal", {"proposalId": pid, "factKey": f"{trace}/{k}", "statement": f"fact {k}",
                                    "tags": ["faults"], "proposer": "claw-0", "deadline": deadline,
                                    "baseVersion": 0})  # fmt: skip
        for voter in (1, 2, 3):
            plan[at + 10 * voter] = (voter, "vote", {"proposalId": pid, "vote": "YES", "reason": "seen it"})
    return plan
