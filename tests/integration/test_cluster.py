"""HiveMem on a 3-node Kafka cluster (RF 3, min ISR 2) loses one node to SIGKILL mid-stream.

The gate, the governance processor and the audit, claws and governance projectors run as
real processes against a local KRaft cluster of three broker+controller nodes and their own
embedded Postgres (this module's fixture: the rest of the suite keeps its single broker).
10,000 signed envelopes go in, ten proposals with their votes among them; the node that
leads the metadata quorum is killed a third of the way through, writes go on on two nodes,
and the node comes back later. Then: every acknowledged envelope is in the log once, has
exactly one verdict and one audit row, no output is on the log twice, the governance
outcome is complete, and each read model equals a clean replay of the log.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, ConfigResource

from contracts.avro import decode_envelope, decode_rejection
from contracts.models import DecisionPayload, FactPayload
from contracts.positions import LogPosition
from deploy.kafka_cluster import MIN_INSYNC_REPLICAS, REPLICATION_FACTOR
from deploy.kafka_local import free_port
from hivemem.demo import claw_client
from hivemem.services import projections
from hivemem.settings import Settings, write_default_config
from hivemem.stack import ServiceProcess, Stack
from producers.claw_client import producer_config
from projections.replay import rebuild
from streams.kafka import read_topics
from streams.records import OUT_HEADER, LogRecord
from tests.conftest import wait_until
from tests.integration.governance_support import mixed_stream
from tests.integration.support import count, owner_db

pytestmark = pytest.mark.integration

TENANT = "acme"
N = 10_000
RATE = 500  # envelopes/s: ~7 s a third
# A third before the kill, a third on two nodes, a third after the restart.
KILL_AT, RESTART_AT = N // 3, 2 * N // 3
DOWN_S = 8.0  # dead past its fencing (6 s): writes go on with two replicas in sync
PROPOSALS = 10
CLAWS = 5  # all heartbeat, so three YES votes are a majority of the quorum basis
SERVICES = {
    "gate": ["gate"],
    "governance": ["governance"],
    "projectors": ["projectors", "audit", "claws", "governance"],
}
READ_MODELS = ("audit", "claws", "governance")
PROCESSORS = ("gate", "governance-processor", *READ_MODELS)
CLAW_TYPES = ("presence", "capabilities", "proposal", "vote")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    home = Path(tmp_path_factory.mktemp("hm-cluster"))
    settings = dataclasses.replace(Settings.from_env(), home=home, kafka_bootstrap=None, database_url=None,
                                   config_path=home / "tenants.toml", api_port=free_port(), kafka_brokers=3,
                                   kafka_replication=None)  # fmt: skip
    write_default_config(settings.config_path, {TENANT: True})
    st = Stack(settings)
    try:
        st.start_backends(say=lambda *_: None)
        env = st.child_env()
        for name, args in SERVICES.items():
            st.services[name] = ServiceProcess(name, args, env, home / "logs")
            st.services[name].start()
        yield st
    finally:
        st.stop()


def _running(stack: Stack) -> bool:
    with owner_db(stack) as conn:
        rows = conn.execute("SELECT processor FROM hivemem.processor_progress WHERE state = 'running'").fetchall()
    return set(PROCESSORS) <= {r[0] for r in rows}


def _governance_report(stack: Stack) -> str:
    """What a failed wait for the governance outcome needs to be understood: each open or undecided proposal
    (ballots, early votes, decision), the heartbeats, the refusals, the loops' progress and the services'
    warnings."""
    lines = []
    with owner_db(stack) as conn:
        for (raw,) in conn.execute("SELECT state FROM govproc.proposals ORDER BY proposal_id"):
            state: dict[str, Any] = json.loads(str(raw))  # text (migration 23)
            lines.append(f"proposal {state['proposal_id']}: proposal={'yes' if state.get('proposal') else 'NO'} "
                         f"ballots={sorted(state.get('ballots', {}))} pending={len(state.get('pending', []))} "
                         f"decision={(state.get('decision') or {}).get('outcome')} "
                         f"at={(state.get('ref') or {}).get('log_time')} "
                         f"votes_at={[b['ref']['log_time'] for b in state.get('ballots', {}).values()]}")  # fmt: skip
        for row in conn.execute("SELECT claw_id, last_seen, ok FROM govproc.presence ORDER BY claw_id"):
            lines.append(f"presence {row}")
        for row in conn.execute("SELECT processor, state, lag FROM hivemem.processor_progress ORDER BY processor"):
            lines.append(f"progress {row}")
        for row in conn.execute("SELECT outcome, reason_code, count(*) FROM audit.events GROUP BY 1, 2"):
            lines.append(f"audit {row}")
        for row in conn.execute("SELECT processor, topic, error FROM hivemem.processing_failures LIMIT 5"):
            lines.append(f"failure {row}")
    for log_file in sorted((stack.settings.home / "logs").glob("*.log")):
        warnings = [ln for ln in log_file.read_text(errors="replace").splitlines() if " hivemem" in ln]
        lines += [f"{log_file.name}: {ln[:300]}" for ln in warnings[-15:]]
    return "\n".join(lines)


def _sent_once(records: list[LogRecord]) -> bool:
    """Every output carries its ``hm-out`` id, and no id is on the log twice."""
    ids = Counter(r.header(OUT_HEADER) for r in records)
    return None not in ids and max(ids.values()) == 1


def _proposal_of(r: LogRecord) -> str:
    payload = decode_envelope(r.value or b"").payload
    assert isinstance(payload, DecisionPayload | FactPayload)
    return str(payload.proposal_id)


def test_one_broker_of_three_sigkilled_mid_stream(cluster: Stack) -> None:
    s = cluster.settings
    kafka = cluster.kafka_cluster
    assert kafka is not None
    bootstrap, names = s.require_kafka(), s.topics
    inbound = [names.inbound(t) for t in CLAW_TYPES]
    verdict_topics = [names.accepted(t) for t in CLAW_TYPES] + [names.rejected]
    governed = [names.inbound("decision"), names.inbound("fact")]

    # Every topic HiveMem made has three replicas on three nodes and asks for two in sync.
    admin = AdminClient({"bootstrap.servers": bootstrap})
    # (A broker learns of new topics from the controller a moment after their creation.)
    md = wait_until(lambda: (m := admin.list_topics(timeout=10)) and set(names.all_topics()) <= set(m.topics) and m,
                    timeout=30, what="every broker knowing the topics")  # fmt: skip
    for topic in names.all_topics():
        for p in md.topics[topic].partitions.values():
            assert len(set(p.replicas)) == REPLICATION_FACTOR, (topic, p.id)

    def min_insync() -> dict[str, str] | None:
        # Each request goes to some broker, which may not know a topic yet though the one that answered
        # list_topics did (UNKNOWN_TOPIC_OR_PART): asked again until every broker answers.
        futures = admin.describe_configs([ConfigResource("topic", t) for t in names.all_topics()])
        try:
            return {res.name: fut.result()["min.insync.replicas"].value for res, fut in futures.items()}
        except KafkaException as e:
            if e.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise
            return None

    configs = wait_until(min_insync, timeout=30, what="every topic's configuration")
    assert configs == dict.fromkeys(names.all_topics(), str(MIN_INSYNC_REPLICAS))

    wait_until(lambda: _running(cluster), timeout=60, what="the processors running")
    # The node to kill: the metadata quorum's leader, which also leads some of the gate's
    # output partitions, so the loss hits the controller, the claws' writes, the gate's
    # publishing and every consumer at once.
    victim = kafka.quorum_leader()
    md = admin.list_topics(timeout=10)
    led = [
        f"{t}:{p}" for t in verdict_topics for p, meta in md.topics[t].partitions.items() if meta.leader == victim + 1
    ]
    assert led, f"node {victim} leads none of the verdict partitions"

    trace = f"cluster-{uuid.uuid4().hex[:8]}"
    producer = Producer(producer_config(bootstrap))
    claws = [claw_client(s, TENANT, f"claw-{i}", producer) for i in range(CLAWS)]
    acked: list[LogPosition] = []
    errors: list[str] = []

    def on_done(pos: LogPosition | None, err: str | None) -> None:
        if pos is not None:
            acked.append(pos)
        else:
            errors.append(str(err))

    at_kill, restarted = threading.Event(), threading.Event()
    unflushed: list[int] = []

    def publish() -> None:
        start = time.monotonic()
        for i, (claw, kind, payload) in enumerate(mixed_stream(trace, N, PROPOSALS, CLAWS, 500, 900)):
            if i == KILL_AT:
                at_kill.set()
            if i == RESTART_AT:
                # The last third goes in while the node rejoins and catches up.
                while not restarted.wait(0.1):
                    producer.poll(0)  # acknowledgements keep coming meanwhile
                start = time.monotonic() - i / RATE
            c = claws[claw]
            c.publish_envelope_async(c.build(kind, payload, trace_id=trace), on_done)
            if i % 50 == 0:
                time.sleep(max(0.0, start + i / RATE - time.monotonic()))
        unflushed.append(producer.flush(120))

    publisher = threading.Thread(target=publish)
    publisher.start()
    # Kill and restart from this thread, which outlives the node: the parent-death signal that
    # ties a node to the test (deploy.process) fires when the *thread* that started it ends.
    assert at_kill.wait(60)
    kafka.kill_node(victim)  # SIGKILL
    time.sleep(DOWN_S)
    try:
        kafka.start_node(victim)
    finally:
        restarted.set()
    publisher.join()
    assert unflushed == [0]
    assert errors == []
    assert len(acked) == N and len(set(acked)) == N

    # Nothing lost: every envelope gets its audit row; every proposal its decision and fact.
    wait_until(lambda: count(cluster, "SELECT count(*) FROM audit.events WHERE source_topic = ANY(%s)",
                              inbound) >= N, timeout=150, interval=1, what=f"{N} audit rows")  # fmt: skip
    facts = "SELECT count(*) FROM governance.facts WHERE tenant = %s"
    try:
        wait_until(lambda: count(cluster, facts, TENANT) >= PROPOSALS, timeout=150, interval=1, what="the facts")
    except AssertionError as e:
        raise AssertionError(f"{e}\n{_governance_report(cluster)}") from None
    # The killed node is back in every partition's ISR: it caught up by replication alone.
    kafka.wait_in_sync(names.all_topics())
    # Each loop rode the broker's loss out in place: no service died over it.
    assert all(svc.alive() for svc in cluster.services.values())

    # The log: every acknowledged envelope is there once (nothing lost to the failover, nothing
    # doubled by the claws' retries)...
    logged = read_topics(bootstrap, inbound)
    assert sorted(r.position for r in logged) == sorted(acked)
    # ...and has exactly one verdict, an acceptance, sent once.
    verdicts = read_topics(bootstrap, verdict_topics)
    refused = [decode_rejection(r.value or b"") for r in verdicts if r.topic == names.rejected]
    assert refused == [], [(x.processor, x.reason_code, x.detail, x.source_topic, x.source_offset) for x in refused]
    assert Counter(r.source() for r in verdicts) == Counter(acked)
    assert _sent_once(verdicts)
    assert len({decode_envelope(r.value or b"").event_id for r in verdicts}) == N
    # The governance processor's outputs: one decision (APPROVED) and one fact per proposal.
    outputs = read_topics(bootstrap, governed)
    assert _sent_once(outputs)
    decided = Counter((r.topic, _proposal_of(r)) for r in outputs)
    assert len(decided) == 2 * PROPOSALS and max(decided.values()) == 1
    assert count(cluster, "SELECT count(*) FROM governance.decisions WHERE tenant = %s AND outcome = 'APPROVED'",
                  TENANT) == PROPOSALS  # fmt: skip

    # The audit table: one row per envelope, by position and by envelope id, all accepted.
    with owner_db(cluster) as conn:
        row = conn.execute("SELECT count(*), count(DISTINCT event_id), count(*) FILTER (WHERE outcome = 'ACCEPTED') "
                           "FROM audit.events WHERE source_topic = ANY(%s)", (inbound,)).fetchone()  # fmt: skip
    assert row == (N, N, N)
    assert count(cluster, "SELECT count(*) FROM audit.events WHERE source_topic = ANY(%s)", governed) == 2 * PROPOSALS

    # Each read model is a pure function of the log: equal to a clean replay.
    models = projections(s)
    for name in READ_MODELS:
        result = rebuild(models[name], bootstrap, s.require_database(), names)
        assert result.equal, (name, result.describe())
