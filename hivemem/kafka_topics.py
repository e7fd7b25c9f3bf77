"""Creating HiveMem's topics (idempotent)."""

from __future__ import annotations

from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from contracts.topics import DEFAULT_PARTITIONS, TopicNames
from streams.kafka import OUTPUT_MAX_BYTES


def output_topics(names: TopicNames) -> list[str]:
    """Topics processors write to: they may carry a forwarded inbound record plus headers."""
    claws_write = set(names.gate_inputs())
    return [t for t in names.all_topics() if t not in claws_write]


def ensure_topics(bootstrap: str, names: TopicNames, partitions: int = DEFAULT_PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    existing = set(admin.list_topics(timeout=15).topics)
    # The broker stamps records: clock-skew checks compare against broker time, replayably.
    base = {"message.timestamp.type": "LogAppendTime", "retention.ms": "-1"}
    outputs = set(output_topics(names))
    big = {**base, "max.message.bytes": str(OUTPUT_MAX_BYTES)}
    new = [NewTopic(t, num_partitions=partitions, replication_factor=1, config=big if t in outputs else base)
           for t in names.all_topics() if t not in existing]  # fmt: skip
    older = sorted(outputs & existing)
    if older:  # topics made before output records had room for their headers
        entry = ConfigEntry("max.message.bytes", str(OUTPUT_MAX_BYTES), incremental_operation=AlterConfigOpType.SET)
        for fut in admin.incremental_alter_configs([ConfigResource("topic", t, incremental_configs=[entry])
                                                    for t in older]).values():  # fmt: skip
            fut.result()
    if not new:
        return
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
