"""A real Apache Kafka broker in KRaft mode on 127.0.0.1, started from Maven Central jars.

The jars are fetched once by ``mvn dependency:copy-dependencies`` on ``deploy/kafka/pom.xml``;
storage is formatted with ``kafka.tools.StorageTool`` and the broker runs as ``kafka.Kafka``.
Data lives under ``<home>/kafka`` and the chosen ports are remembered there, so a restart
keeps the log and the bootstrap address. A cluster of three such nodes: ``deploy/kafka_cluster.py``.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

from deploy.process import die_with_parent

HERE = Path(__file__).resolve().parent / "kafka"
LIBS = HERE / "target" / "libs"


def ensure_jars() -> Path:
    """Fetch the broker jars through Maven if they are not there yet, or were fetched for another
    version of the pom (the marker holds the pom's hash; old jars are removed first)."""
    marker = LIBS / ".complete"
    want = hashlib.sha256((HERE / "pom.xml").read_bytes()).hexdigest()
    if not marker.exists() or marker.read_text().strip() != want:
        mvn = shutil.which("mvn")
        if mvn is None:
            raise RuntimeError("Maven (mvn) is needed to fetch the Kafka jars; install it first")
        if LIBS.exists():
            shutil.rmtree(LIBS)
        subprocess.run([mvn, "-q", "-B", "-f", str(HERE / "pom.xml"), "dependency:copy-dependencies"],
                       check=True)  # fmt: skip
        marker.write_text(want + "\n")
    return LIBS


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_free(port: int) -> bool:
    with socket.socket() as s:
        # As the JVM does: a port in TIME_WAIT after our own broker stopped is reusable.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _java(home: str | None) -> str:
    """The JVM: ``$JAVA_HOME/bin/java`` when ``home`` (JAVA_HOME, read by hivemem.settings) has one, else on PATH."""
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise RuntimeError("Java 17+ is needed to run Kafka; install a JDK first")
    return found


def java_cmd(heap: str, main: str, *args: str, java_home: str | None = None) -> list[str]:
    """The JVM command line that runs ``main`` from the broker jars (the JVM of ``java_home``, else on PATH)."""
    libs = ensure_jars()
    return [_java(java_home), f"-Xmx{heap}", "-XX:+UseG1GC",
            f"-Dlog4j2.configurationFile={HERE / 'log4j2.properties'}",
            "-cp", f"{libs}/*", main, *args]  # fmt: skip


def new_cluster_id() -> str:
    cluster_id = "-"
    while cluster_id.startswith("-"):  # StorageTool would read "-..." as an option
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    return cluster_id


def format_storage(cfg: Path, cluster_id: str, heap: str, java_home: str | None = None) -> None:
    """Format a node's log dirs for ``cluster_id`` (a no-op if they already are)."""
    subprocess.run(java_cmd(heap, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(cfg),
                            "--ignore-formatted", java_home=java_home),
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip


def spawn_broker(cfg: Path, log_path: Path, heap: str, java_home: str | None = None) -> subprocess.Popen[bytes]:
    """Start ``kafka.Kafka`` on ``cfg``; it dies with this process (parent-death signal)."""
    log = open(log_path, "ab")  # noqa: SIM115 - owned by the child process
    return subprocess.Popen(java_cmd(heap, "kafka.Kafka", str(cfg), java_home=java_home), stdout=log,
                            stderr=subprocess.STDOUT,
                            start_new_session=True, preexec_fn=die_with_parent)  # fmt: skip


def stop_process(proc: subprocess.Popen[bytes] | None, timeout: float = 30.0) -> None:
    """SIGTERM (a broker's controlled shutdown), SIGKILL if it takes longer than ``timeout``."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class LocalKafka:
    """One broker+controller node. ``start()`` returns the bootstrap address."""

    def __init__(self, home: Path, heap: str = "768m", java_home: str | None = None) -> None:
        self.dir = home / "kafka"
        self.heap = heap
        self.java_home = java_home
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.controller_port = 0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _choose_ports(self) -> None:
        ports_file = self.dir / "ports"
        if ports_file.exists():
            p, c = (int(x) for x in ports_file.read_text().split())
            if port_free(p) and port_free(c):
                self.port, self.controller_port = p, c
                return
        self.port, self.controller_port = free_port(), free_port()
        ports_file.write_text(f"{self.port} {self.controller_port}\n")

    def _write_config(self) -> Path:
        cfg = self.dir / "server.properties"
        cfg.write_text(
            "\n".join(
                [
                    "process.roles=broker,controller",
                    "node.id=1",
                    f"controller.quorum.voters=1@127.0.0.1:{self.controller_port}",
                    f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
                    f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}",
                    "controller.listener.names=CONTROLLER",
                    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                    "inter.broker.listener.name=PLAINTEXT",
                    f"log.dirs={self.dir / 'data'}",
                    "num.partitions=3",
                    "offsets.topic.replication.factor=1",
                    "offsets.topic.num.partitions=6",
                    "transaction.state.log.replication.factor=1",
                    "transaction.state.log.min.isr=1",
                    "share.coordinator.state.topic.replication.factor=1",
                    "share.coordinator.state.topic.min.isr=1",
                    "group.initial.rebalance.delay.ms=0",
                    # The broker stamps each record: the gate's "server time" for clock skew.
                    "log.message.timestamp.type=LogAppendTime",
                    "auto.create.topics.enable=false",
                    "log.retention.hours=-1",
                    # A local broker shares a few cores with everything else: few threads.
                    "num.network.threads=2",
                    "num.io.threads=2",
                    "",
                ]
            )
        )
        return cfg

    def start(self, timeout: float = 90.0) -> str:
        self.dir.mkdir(parents=True, exist_ok=True)
        self._choose_ports()
        cfg = self._write_config()
        if not (self.dir / "data" / "meta.properties").exists():
            format_storage(cfg, new_cluster_id(), self.heap, self.java_home)
        self.proc = spawn_broker(cfg, self.dir / "broker.log", self.heap, self.java_home)
        self._wait_ready(timeout)
        return self.bootstrap

    def _wait_ready(self, timeout: float) -> None:
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"Kafka exited with {self.proc.returncode}; see {self.dir / 'broker.log'}")
            try:
                md = admin.list_topics(timeout=2)
                if md.brokers:
                    return
            except Exception:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"Kafka did not start within {timeout:.0f} s; see {self.dir / 'broker.log'}")

    def stop(self, timeout: float = 30.0) -> None:
        stop_process(self.proc, timeout)
        self.proc = None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
