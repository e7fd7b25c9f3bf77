"""Kubernetes' migration steps (deploy/k8s), run with the image's own code:

- ``python -m hivemem.migrate_cli migrate`` (the Job, deploy/k8s/migrate-job.yaml): check the Kafka
  topics, then apply the pending Postgres migrations.
- ``python -m hivemem.migrate_cli wait`` (the init container of every Deployment): wait until the
  database has every migration this image knows.

``migrate`` does what ``hivemem up`` does before starting services (``Stack.start_backends``) except
create topics: on a shared cluster they are the platform's to declare (KafkaTopic resources,
deploy/k8s/examples/strimzi, often with clients not allowed to create topics), so the Job only
checks them. Topics are checked first so that, while they are missing, the services' init
containers keep waiting (they wait for the migrations) instead of starting processors with
nothing to read. Without ``wait``, a new release's services would start on the old schema, fail
on the first missing table and back off for minutes.
"""

from __future__ import annotations

import sys
import time

import psycopg
from confluent_kafka.admin import AdminClient

from contracts.topics import DEFAULT_PARTITIONS
from hivemem.settings import Settings
from projections.migrations import MIGRATIONS, migrate

POLL_S = 3.0


def topic_problems(found: dict[str, int], expected: list[str], partitions: int = DEFAULT_PARTITIONS) -> list[str]:
    """Missing topics, and topics with another partition count: the gate writes each verdict to
    the partition number it read the record from, and processors pick output partitions modulo
    ``DEFAULT_PARTITIONS``, so every topic must have exactly that many."""
    problems = [f"{t}: missing" for t in expected if t not in found]
    problems += [f"{t}: {found[t]} partitions, HiveMem needs {partitions}"
                 for t in expected if t in found and found[t] != partitions]  # fmt: skip
    return problems


def run_migrate() -> int:
    settings = Settings.from_env()
    admin = AdminClient({"bootstrap.servers": settings.require_kafka(), "log_level": 3})
    found = {name: len(t.partitions) for name, t in admin.list_topics(timeout=30).topics.items()}
    problems = topic_problems(found, settings.topics.all_topics())
    if problems:
        print("\n".join(problems), file=sys.stderr)
        print("create the topics first (deploy/k8s/examples/strimzi, docs/deploy-kubernetes.md)", file=sys.stderr)
        return 1
    applied = migrate(
        settings.require_database(),
        settings.load_config().app_db_password,
        lambda v, name: print(f"applying migration {v} ({name})", flush=True),
    )
    print(f"topics ok; migrations applied now: {applied or 'none (already up to date)'}")
    return 0


def missing_versions(url: str) -> set[int]:
    want = {version for version, _, _ in MIGRATIONS}
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            rows = conn.execute("SELECT version FROM hivemem.schema_migrations").fetchall()
    except psycopg.errors.UndefinedTable:  # no migration has run yet
        return want
    return want - {int(r[0]) for r in rows}


def run_wait() -> int:
    url = Settings.from_env().require_database()
    while True:
        try:
            missing = missing_versions(url)
        except psycopg.Error as exc:  # Postgres not reachable yet: keep waiting, say why
            print(f"waiting for Postgres: {type(exc).__name__}: {exc}".strip(), flush=True)
        else:
            if not missing:
                return 0
            print(f"waiting for the migration Job: versions {sorted(missing)} not applied yet", flush=True)
        time.sleep(POLL_S)


STEPS = {"migrate": run_migrate, "wait": run_wait}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in STEPS:
        print(f"usage: python -m hivemem.migrate_cli {{{'|'.join(STEPS)}}}", file=sys.stderr)
        return 2
    return STEPS[argv[0]]()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
