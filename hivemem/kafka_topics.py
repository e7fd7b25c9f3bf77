"""Creating HiveMem's topics (idempotent).

Replication: one copy on a single broker; on a cluster, three copies with
``min.insync.replicas`` 2. With every HiveMem producer on ``acks=all`` (and idempotent), an
acknowledged record is then on two nodes at least, and losing any one node neither loses
it nor stops writes. Topics that already exist keep their replication (changing it is a
partition reassignment, an operator's decision).
"""

from __future__ import annotations

from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from contracts.topics import DEFAULT_PARTITIONS, TopicNames
from streams.kafka import OUTPUT_MAX_BYTES


def output_topics(names: TopicNames) -> list[str]:
    """Topics processors write to: they may carry a forwarded inbound record plus headers."""
    claws_write = set(names.gate_inputs())
    return [t for t in names.all_topics() if t not in claws_write]


def replication_for(brokers: int) -> int:
    """The replication factor when none is configured: the broker count, up to 3."""
    return max(1, min(3, brokers))


def min_insync_for(replication_factor: int) -> int:
    """2 of 3 (or more) copies: an acknowledged write survives one loss, and writes go on during
    it. With 2 copies, 1: requiring both would stop every write while either broker is down."""
    return 2 if replication_factor >= 3 else 1


def ensure_topics(bootstrap: str, names: TopicNames, partitions: int = DEFAULT_PARTITIONS,
                  replication_factor: int | None = None) -> None:  # fmt: skip
    """Create the topics that are missing; ``replication_factor`` None: from the live broker count."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    md = admin.list_topics(timeout=15)
    existing = set(md.topics)
    rf = replication_factor or replication_for(len(md.brokers))
    # The broker stamps records: clock-skew checks compare against broker time, replayably.
    base = {"message.timestamp.type": "LogAppendTime", "retention.ms": "-1"}
    if rf > 1:
        base["min.insync.replicas"] = str(min_insync_for(rf))
    outputs = set(output_topics(names))
    big = {**base, "max.message.bytes": str(OUTPUT_MAX_BYTES)}
    new = [NewTopic(t, num_partitions=partitions, replication_factor=rf, config=big if t in outputs else base)
           for t in names.all_topics() if t not in existing]  # fmt: skip
    older = sorted(outputs & existing)
    if older:  # topics made before output records had room for their headers
        entry = ConfigEntry("max.message.bytes", str(OUTPUT_MAX_BYTES), incremental_operation=AlterConfigOpType.SET)
        for fut in admin.incremental_alter_configs([ConfigResource("topic", t, incremental_configs=[entry])
                                                    for t in older]).values():  # fmt: skip
            fut.result()
    if not new:
        return
    if rf > len(md.brokers):  # Kafka would say INVALID_REPLICATION_FACTOR; say why
        raise RuntimeError(f"replication factor {rf} needs {rf} brokers; {len(md.brokers)} answer at {bootstrap}")
    for topic, fut in admin.create_topics(new, operation_timeout=30).items():
        try:
            fut.result()
        except Exception as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise RuntimeError(f"could not create topic {topic}: {exc}") from exc


def kafka_reachable(bootstrap: str, timeout: float = 2.0) -> bool:
    try:
        md = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(timeout=timeout)
        return bool(md.brokers)
    except Exception:
        return False
