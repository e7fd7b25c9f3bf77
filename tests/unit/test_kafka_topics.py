"""Topic replication policy, the producers' delivery guarantees, which local Kafka a home uses
(no broker needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hivemem.kafka_topics import min_insync_for, replication_for
from hivemem.stack import check_local_log
from producers.claw_client import producer_config as claw_producer_config
from streams.kafka import producer_config as runtime_producer_config


@pytest.mark.parametrize(("brokers", "rf", "min_isr"), [(1, 1, 1), (2, 2, 1), (3, 3, 2), (5, 3, 2)])
def test_replication_follows_the_broker_count(brokers: int, rf: int, min_isr: int) -> None:
    # One broker keeps the single copy it always had; from three on, three copies, two in sync.
    assert replication_for(brokers) == rf
    assert min_insync_for(rf) == min_isr


def test_every_producer_config_is_idempotent_with_acks_all() -> None:
    """The runtime's (processors, the API's CAML publisher, audit roots) and the claws' (ClawClient,
    the HTTP write gateway): an acknowledged record is on min.insync.replicas nodes, and a retry
    after a leader change is never written twice."""
    for config in (runtime_producer_config("k:9092"), claw_producer_config("k:9092"),
                   claw_producer_config("k:9092", **{"linger.ms": 20})):  # fmt: skip
        assert config["enable.idempotence"] is True
        assert config["acks"] == "all"


def test_a_home_keeps_the_kafka_it_was_built_on(tmp_path: Path) -> None:
    # Offsets and read models in Postgres belong to one log: switching to the other is refused.
    (tmp_path / "kafka" / "data").mkdir(parents=True)
    check_local_log(tmp_path, 1)
    with pytest.raises(RuntimeError, match="single broker"):
        check_local_log(tmp_path, 3)
    cluster_home = tmp_path / "c"
    (cluster_home / "kafka-cluster").mkdir(parents=True)
    check_local_log(cluster_home, 3)
    with pytest.raises(RuntimeError, match="local cluster"):
        check_local_log(cluster_home, 1)
