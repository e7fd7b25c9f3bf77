"""Creating HiveMem's topics (idempotent)."""

from __future__ import annotations

from confluent_kafka.admin import AdminClient, NewTopic

from contracts.topics import DEFAULT_PARTITIONS, TopicNames


def ensure_topics(bootstrap: str, names: TopicNames, partitions: int = DEFAULT_PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    existing = set(admin.list_topics(timeout=15).topics)
    # The broker stamps records: clock-skew checks compare against broker time, replayably.
    config = {"message.timestamp.type": "LogAppendTime", "retention.ms": "-1"}
    new = [NewTopic(t, num_partitions=partitions, replication_factor=1, config=config)
           for t in names.all_topics() if t not in existing]  # fmt: skip
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
