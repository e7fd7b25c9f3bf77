"""Starting and supervising the whole system: backends, migrations, topics, services."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from deploy.kafka_cluster import LocalKafkaCluster
from deploy.kafka_local import LocalKafka, free_port, port_free
from deploy.postgres_local import LocalPostgres
from hivemem.kafka_topics import ensure_topics
from hivemem.settings import Settings
from projections.migrations import migrate

SERVICES = {
    "gate": ["gate"],
    "governance": ["governance"],
    "caml": ["caml"],
    "kmms": ["kmms", "core"],
    "kmms-embedders": ["kmms", "embedders"],
    "kmp": ["kmp"],
    "kstar": ["kstar"],
    "projectors": ["projectors"],
    "api": ["api"],
}


class ServiceProcess:
    """One ``python -m hivemem.services ...`` child, its output in ``<home>/logs``."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], log_dir: Path) -> None:
        self.name, self.args, self.env, self.log_dir = name, args, env, log_dir
        self.proc: subprocess.Popen[bytes] | None = None
        self.restarts = 0

    def start(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_dir / f"{self.name}.log", "ab")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen([sys.executable, "-m", "hivemem.services", *self.args], env=self.env,
                                     stdout=log, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def check_local_log(home: Path, brokers: int) -> None:
    """Refuse to switch a home between the single broker and the local cluster: each has a log
    of its own, while the read models and stored offsets in Postgres belong to the one they were
    built from (against a fresh log, records below those offsets would be skipped)."""
    single, cluster = home / "kafka" / "data", home / "kafka-cluster"
    other = single if brokers > 1 else cluster
    if other.exists():
        raise RuntimeError(f"{home} holds the log of {'the single broker' if brokers > 1 else 'a local cluster'} "
                           f"({other}); HIVEMEM_KAFKA_BROKERS={brokers} would start on an empty one. "
                           "Use another HIVEMEM_HOME, or the same HIVEMEM_KAFKA_BROKERS as before.")  # fmt: skip


class Stack:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.kafka: LocalKafka | None = None
        self.kafka_cluster: LocalKafkaCluster | None = None  # HIVEMEM_KAFKA_BROKERS >= 3
        self.postgres: LocalPostgres | None = None
        self.services: dict[str, ServiceProcess] = {}

    def start_backends(self, say: Callable[[str], object] = print) -> Settings:
        s = self.settings
        s.home.mkdir(parents=True, exist_ok=True)
        bootstrap, db = s.kafka_bootstrap, s.database_url
        replication = s.kafka_replication
        if not bootstrap:
            check_local_log(s.home, s.kafka_brokers)
        if not bootstrap and s.kafka_brokers > 1:
            self.kafka_cluster = LocalKafkaCluster(s.home, s.kafka_brokers, java_home=s.java_home)
            bootstrap = self.kafka_cluster.start()
            replication = replication or self.kafka_cluster.size
            say(f"Kafka (KRaft, local cluster of {s.kafka_brokers}) on {bootstrap}")
        elif not bootstrap:
            self.kafka = LocalKafka(s.home, java_home=s.java_home)
            bootstrap = self.kafka.start()
            say(f"Kafka (KRaft, local) on {bootstrap}")
        if not db:
            self.postgres = LocalPostgres(s.home)
            db = self.postgres.start()
            say(f"PostgreSQL (embedded) at {db}")
        self.settings = s = dataclasses.replace(s, kafka_bootstrap=bootstrap, database_url=db)
        config = s.load_config()
        migrate(db, config.app_db_password, lambda v, name: say(f"applying migration {v} ({name})"))
        ensure_topics(bootstrap, s.topics, replication_factor=replication)
        if self._owns_backends():
            (s.home / "endpoints.json").write_text(json.dumps(
                {"kafka_bootstrap": bootstrap, "database_url": db, "pid": os.getpid()}))  # fmt: skip
        return s

    def _owns_backends(self) -> bool:
        return self.kafka is not None or self.kafka_cluster is not None or self.postgres is not None

    def child_env(self) -> dict[str, str]:
        s = self.settings
        env = dict(os.environ)
        env.update(HIVEMEM_HOME=str(s.home), HIVEMEM_KAFKA_BOOTSTRAP=s.require_kafka(),
                   HIVEMEM_DATABASE_URL=s.require_database(), HIVEMEM_TOPIC_PREFIX=s.topic_prefix,
                   HIVEMEM_API_HOST=s.api_host, HIVEMEM_API_PORT=str(s.api_port),
                   HIVEMEM_CONFIG=str(s.config_path), HIVEMEM_PRESENCE_WINDOW_S=str(s.presence_window_s),
                   HIVEMEM_EXPIRY_GRACE_MS=str(s.expiry_grace_ms))  # fmt: skip
        return env

    def start_services(self, names: list[str] | None = None, api_port: int | None = None) -> None:
        if api_port is not None:
            self.settings = dataclasses.replace(self.settings, api_port=api_port)
        elif "api" in (names or SERVICES) and (self.settings.api_port == 0 or not port_free(self.settings.api_port)):
            self.settings = dataclasses.replace(self.settings, api_port=free_port())
        env = self.child_env()
        for name in names or list(SERVICES):
            svc = ServiceProcess(name, SERVICES[name], env, self.settings.home / "logs")
            svc.start()
            self.services[name] = svc
        if "api" in self.services:
            self.wait_api()
            if names is None:  # the whole system: wait until every processor runs (models loaded)
                self.wait_ready()

    @property
    def api_url(self) -> str:
        return f"http://{self.settings.api_host}:{self.settings.api_port}"

    def wait_api(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.services["api"].alive():
                raise RuntimeError(f"the API exited; see {self.settings.home / 'logs' / 'api.log'}")
            try:
                if httpx.get(f"{self.api_url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError("the API did not answer /healthz in time")

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Until /readyz answers 200: every processor alive (caught up or not). The caml service
        loads its models (NER, embeddings) first, which takes seconds on a small machine."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.api_url}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"HiveMem did not become ready in {timeout:.0f} s; see {self.settings.home / 'logs'}")

    def supervise_once(self) -> list[str]:
        """Restart the local broker (or cluster node) or any service that died; return their names."""
        restarted = []
        if self.kafka is not None and not self.kafka.alive():
            self.kafka.start()
            restarted.append("kafka")
        if self.kafka_cluster is not None:
            for i in self.kafka_cluster.dead_nodes():
                self.kafka_cluster.start_node(i)
                restarted.append(f"kafka node {i}")
        for name, svc in self.services.items():
            if not svc.alive():
                svc.restarts += 1
                svc.start()
                restarted.append(name)
        return restarted

    def stop(self) -> None:
        # SIGTERM to every service at once, then wait: each stops within a few seconds.
        for svc in self.services.values():
            if svc.proc is not None and svc.proc.poll() is None:
                svc.proc.terminate()
        for svc in reversed(list(self.services.values())):
            svc.stop()
        self.services.clear()
        if self._owns_backends():
            (self.settings.home / "endpoints.json").unlink(missing_ok=True)
        if self.kafka is not None:
            self.kafka.stop()
        if self.kafka_cluster is not None:
            self.kafka_cluster.stop()
        if self.postgres is not None:
            self.postgres.stop()
