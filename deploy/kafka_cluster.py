"""A local Apache Kafka cluster in KRaft mode: three (or more) broker+controller nodes on
127.0.0.1, from the same Maven Central jars as the single broker (``deploy/kafka_local.py``).

Every node is a broker and a voter of the controller quorum, so the cluster keeps its
metadata and keeps serving with any one node gone (a quorum of 3 tolerates one loss).
Brokers default to replication factor 3 and ``min.insync.replicas`` 2, and unclean leader
election stays off: a record acknowledged with ``acks=all`` is on at least two nodes and
only an in-sync replica may lead, so losing one node loses nothing acknowledged.

Data lives under ``<home>/kafka-cluster/node-<i>``; the cluster id and the ports are
remembered there, so a restart of the cluster, or of one node, keeps logs and addresses.
Nodes are addressed by index (0, 1, 2); their Kafka ``node.id`` is index + 1.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient

from deploy.kafka_local import (
    format_storage,
    free_port,
    java_cmd,
    new_cluster_id,
    port_free,
    spawn_broker,
    stop_process,
)

REPLICATION_FACTOR = 3
MIN_INSYNC_REPLICAS = 2


class ClusterNode:
    """One broker+controller process of the cluster."""

    def __init__(self, index: int, directory: Path, port: int, controller_port: int) -> None:
        self.index = index
        self.node_id = index + 1
        self.dir = directory
        self.port = port
        self.controller_port = controller_port
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.dir / "broker.log"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


class LocalKafkaCluster:
    """``start()`` returns the bootstrap string of every node. ``kill_node(i)`` (SIGKILL),
    ``stop_node(i)`` (controlled shutdown) and ``start_node(i)`` act on one node alone.

    Start nodes from a thread that lives as long as they should: a node gets SIGTERM when the
    thread that started it ends (``deploy.process.die_with_parent``: Linux's parent-death
    signal follows the creating thread, not the process).
    """

    # Each node's heap: three of them, Postgres and the services fit a 2-core, 24 GiB machine
    # with room to spare; a test cluster's few partitions need far less.
    def __init__(self, home: Path, size: int = 3, heap: str = "384m", java_home: str | None = None) -> None:
        if size < 3:
            # Two voters cannot lose one and keep a quorum; a single node is LocalKafka.
            raise ValueError(f"a local cluster needs at least 3 nodes, not {size}")
        self.dir = home / "kafka-cluster"
        self.size = size
        self.heap = heap
        self.java_home = java_home
        self.nodes: list[ClusterNode] = []

    @property
    def bootstrap(self) -> str:
        return ",".join(n.address for n in self.nodes)

    # -- the whole cluster ------------------------------------------------------------------

    def start(self, timeout: float = 120.0) -> str:
        """Start every node that is not running; return once all are registered and unfenced."""
        self.dir.mkdir(parents=True, exist_ok=True)
        if not self.nodes:
            self._choose_ports()
        cluster_id = self._cluster_id()
        for node in self.nodes:
            if not node.alive():
                self._launch(node, cluster_id)
        self._wait_brokers({n.node_id for n in self.nodes}, timeout)
        return self.bootstrap

    def stop(self, timeout: float = 30.0) -> None:
        # SIGTERM to every node at once, then wait: one by one, each leadership would move
        # from node to node on the way down.
        for node in self.nodes:
            if node.alive():
                assert node.proc is not None
                node.proc.terminate()
        for node in self.nodes:
            stop_process(node.proc, timeout)
            node.proc = None

    def dead_nodes(self) -> list[int]:
        return [n.index for n in self.nodes if not n.alive()]

    # -- one node ---------------------------------------------------------------------------

    def kill_node(self, index: int) -> None:
        """SIGKILL: no controlled shutdown, no flush, leaderships move only once the
        controller fences the node (``broker.session.timeout.ms``)."""
        node = self.nodes[index]
        if node.proc is not None:
            node.proc.kill()
            node.proc.wait()
            node.proc = None

    def stop_node(self, index: int, timeout: float = 30.0) -> None:
        node = self.nodes[index]
        stop_process(node.proc, timeout)
        node.proc = None

    def start_node(self, index: int, timeout: float = 90.0) -> None:
        """(Re)start one node on its own log dir and ports; return once it is registered again.
        Its replicas then catch up from the leaders by themselves (see ``wait_in_sync``)."""
        node = self.nodes[index]
        if not node.alive():
            self._launch(node, self._cluster_id())
        self._wait_brokers({node.node_id}, timeout)

    def index_of(self, node_id: int) -> int:
        return node_id - 1

    def leader_of(self, topic: str, partition: int, timeout: float = 10.0) -> int:
        """Index of the node leading ``topic``'s ``partition`` now."""
        md = self._admin().list_topics(topic, timeout=timeout)
        return self.index_of(int(md.topics[topic].partitions[partition].leader))

    def quorum_leader(self) -> int:
        """Index of the active controller (the metadata quorum's leader). Kafka's admin API
        does not tell (in KRaft it names a random broker), so this asks Kafka's own tool."""
        out = subprocess.run(java_cmd("128m", "org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-server",
                                      self.bootstrap, "describe", "--status", java_home=self.java_home),
                             check=True, capture_output=True, text=True, timeout=60).stdout  # fmt: skip
        for line in out.splitlines():
            name, _, value = line.partition(":")
            if name.strip() == "LeaderId":
                return self.index_of(int(value))
        raise RuntimeError(f"no LeaderId in the quorum's status: {out!r}")

    def wait_in_sync(self, topics: list[str], timeout: float = 90.0) -> None:
        """Until every replica of every partition of ``topics`` is in sync again."""
        admin = self._admin()
        deadline = time.monotonic() + timeout
        behind: list[str] = []
        while time.monotonic() < deadline:
            try:
                md = admin.list_topics(timeout=5)
                behind = [f"{t}:{p}" for t in topics for p, meta in md.topics[t].partitions.items()
                          if sorted(meta.isrs) != sorted(meta.replicas)]  # fmt: skip
                if not behind:
                    return
            except Exception:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"replicas not back in sync within {timeout:.0f} s: {behind[:5]}")

    # -- internals --------------------------------------------------------------------------

    def _admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})

    def _choose_ports(self) -> None:
        """The ports of the last run if they are still free: the quorum's voter list and the
        clients' bootstrap string name them, so a restarted cluster keeps them."""
        ports_file = self.dir / "ports"
        ports: list[int] = []
        if ports_file.exists():
            ports = [int(x) for x in ports_file.read_text().split()]
            if len(ports) != 2 * self.size or not all(port_free(p) for p in ports):
                ports = []
        if not ports:
            ports = []
            while len(ports) < 2 * self.size:  # free_port may hand out one twice before it is bound
                p = free_port()
                if p not in ports:
                    ports.append(p)
            ports_file.write_text(" ".join(map(str, ports)) + "\n")
        self.nodes = [ClusterNode(i, self.dir / f"node-{i}", ports[2 * i], ports[2 * i + 1]) for i in range(self.size)]

    def _cluster_id(self) -> str:
        path = self.dir / "cluster.id"
        if not path.exists():
            path.write_text(new_cluster_id() + "\n")
        return path.read_text().strip()

    def _launch(self, node: ClusterNode, cluster_id: str) -> None:
        node.dir.mkdir(parents=True, exist_ok=True)
        cfg = self._write_config(node)
        if not (node.dir / "data" / "meta.properties").exists():
            format_storage(cfg, cluster_id, self.heap, self.java_home)
        node.proc = spawn_broker(cfg, node.log_path, self.heap, self.java_home)

    def _write_config(self, node: ClusterNode) -> Path:
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes)
        cfg = node.dir / "server.properties"
        lines = [
            "process.roles=broker,controller",
            f"node.id={node.node_id}",
            f"controller.quorum.voters={voters}",
            f"listeners=PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{node.port}",
            "controller.listener.names=CONTROLLER",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name=PLAINTEXT",
            f"log.dirs={node.dir / 'data'}",
            "num.partitions=3",
            # Topics Kafka or a client creates without saying (HiveMem's say it: hivemem.kafka_topics).
            f"default.replication.factor={REPLICATION_FACTOR}",
            f"min.insync.replicas={MIN_INSYNC_REPLICAS}",
            f"offsets.topic.replication.factor={REPLICATION_FACTOR}",
            "offsets.topic.num.partitions=6",
            f"transaction.state.log.replication.factor={REPLICATION_FACTOR}",
            f"transaction.state.log.min.isr={MIN_INSYNC_REPLICAS}",
            f"share.coordinator.state.topic.replication.factor={REPLICATION_FACTOR}",
            f"share.coordinator.state.topic.min.isr={MIN_INSYNC_REPLICAS}",
            # Kafka's default, said out loud: only an in-sync replica may become leader, so an
            # acknowledged record is never given up for availability.
            "unclean.leader.election.enable=false",
            # A dead node is fenced (and its leaderships moved) after 6 s instead of 9 s; its
            # replicas leave the ISR at fencing, so acks=all writes wait no longer than that.
            "broker.session.timeout.ms=6000",
            "broker.heartbeat.interval.ms=1000",
            "replica.lag.time.max.ms=10000",
            # Three JVMs share two cores with Postgres and the services: fewer threads each.
            "num.network.threads=2",
            "num.io.threads=2",
            "background.threads=2",
            "num.recovery.threads.per.data.dir=1",
            "log.cleaner.threads=1",
            "group.initial.rebalance.delay.ms=0",
            # The broker stamps each record: the gate's "server time" for clock skew.
            "log.message.timestamp.type=LogAppendTime",
            "auto.create.topics.enable=false",
            "log.retention.hours=-1",
            "",
        ]
        cfg.write_text("\n".join(lines))
        return cfg

    def _wait_brokers(self, node_ids: set[int], timeout: float) -> None:
        """Until ``node_ids`` are all in the metadata's broker list (registered and unfenced)."""
        admin = self._admin()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for node in self.nodes:
                if node.node_id in node_ids and node.proc is not None and node.proc.poll() is not None:
                    raise RuntimeError(f"Kafka node {node.index} exited with {node.proc.returncode}; "
                                       f"see {node.log_path}")  # fmt: skip
            try:
                md = admin.list_topics(timeout=2)
                if node_ids <= set(md.brokers):
                    return
            except Exception:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"Kafka nodes {sorted(node_ids)} not up within {timeout:.0f} s; see {self.dir}/node-*/")
