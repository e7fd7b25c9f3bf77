"""The migration Job (deploy/k8s/migrate-job.yaml): check the Kafka topics, then apply the
pending Postgres migrations.

It does what ``hivemem up`` does before starting services (``Stack.start_backends``) except
create topics: on a shared cluster they are the platform's to declare (KafkaTopic resources,
deploy/k8s/examples/strimzi, often with clients not allowed to create topics), so the Job only
checks them. Topics are checked first so that, while they are missing, the services' init
containers keep waiting (they wait for the migrations) instead of starting processors with
nothing to read.
"""

from __future__ import annotations

import sys

from confluent_kafka.admin import AdminClient

from contracts.topics import DEFAULT_PARTITIONS
from hivemem.settings import Settings
from projections.migrations import migrate


def topic_problems(found: dict[str, int], expected: list[str], partitions: int = DEFAULT_PARTITIONS) -> list[str]:
    """Missing topics, and topics with another partition count: the gate writes each verdict to
    the partition number it read the record from, and processors pick output partitions modulo
    ``DEFAULT_PARTITIONS``, so every topic must have exactly that many."""
    problems = [f"{t}: missing" for t in expected if t not in found]
    problems += [f"{t}: {found[t]} partitions, HiveMem needs {partitions}"
                 for t in expected if t in found and found[t] != partitions]  # fmt: skip
    return problems


def main() -> int:
    settings = Settings.from_env()
    admin = AdminClient({"bootstrap.servers": settings.require_kafka(), "log_level": 3})
    found = {name: len(t.partitions) for name, t in admin.list_topics(timeout=30).topics.items()}
    problems = topic_problems(found, settings.topics.all_topics())
    if problems:
        print("\n".join(problems), file=sys.stderr)
        print("create the topics first (deploy/k8s/examples/strimzi, docs/deploy-kubernetes.md)", file=sys.stderr)
        return 1
    applied = migrate(settings.require_database(), settings.load_config().app_db_password)
    print(f"topics ok; migrations applied now: {applied or 'none (already up to date)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
