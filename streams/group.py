"""One processor split over instances by Kafka's own means: its instances form a consumer group and the
group splits the input partitions between them (``HIVEMEM_INSTANCE`` names an instance; only processors
marked ``parallel`` may split: those whose state is absent, per record in Postgres, or keyed like their input
records and read per batch, and the governance processor, whose state follows its partitions, see below).

Kafka decides who reads a partition; Postgres makes it safe, as in the single-instance protocol:

* every instance holds the processor's lock ``stream:<name>`` *shared* (an unsplit copy, which holds it
  exclusively, cannot run beside them) and its own outbox owner's lock ``outbox:<name>@<instance>``;
* a partition is processed only under the session lock ``stream:<name>:<topic>:<partition>``, taken when
  the group assigns it (waiting for the previous owner to let go: a revoked instance releases its locks
  when its loop next polls, after committing its batch; a killed one, when its connection dies) and
  released when the group revokes it. Offsets stay in ``hivemem.projection_offsets``, shared, so the next
  owner resumes exactly where the last committed batch ended;
* outputs go through the instance's own outbox owner (``streams.publisher``). Rows left by an instance
  that is gone (its owner lock is free) are adopted: another instance publishes them under the gone
  owner's name, after the same recovery scan, so nothing is lost and nothing is sent twice.

Static membership (``group.instance.id``) lets a restarted instance take its partitions back at once; a
killed one's partitions move to the others after ``session.timeout.ms`` (6 s).

A processor whose state is per tenant across several input topics (the governance processor: presence,
proposals and votes, written to their tenant's partition by the gate) is marked ``copartitioned``: its group
uses Kafka's range assignor, which hands each instance the same partition numbers of every input topic, and
the runtime tells it which partitions it holds after every change (``partitions_changed``), so it loads the
state of exactly the tenants those partitions carry, as the previous owner committed it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from streams.kafka import TP, consumer_config
from streams.offsets import Conn
from streams.processor import Outage

SESSION_TIMEOUT_MS = 6_000  # the broker's minimum by default: a dead instance's partitions move after this
LOCK_WAIT_S = 60.0  # how long an assigned partition may wait for its previous owner's lock


def group_config(bootstrap: str, name: str, instance: str, copartitioned: bool = False) -> dict[str, Any]:
    return {
        **consumer_config(bootstrap, name),
        "group.instance.id": f"{name}-{instance}",
        "session.timeout.ms": SESSION_TIMEOUT_MS,
        "heartbeat.interval.ms": 1_000,
        # range: partition i of every input topic goes to the same instance (topics of equal partition counts).
        "partition.assignment.strategy": "range" if copartitioned else "roundrobin",
    }


def owner_of(name: str, instance: str) -> str:
    return f"{name}@{instance}"


def partition_lock(name: str, tp: TP) -> str:
    return f"stream:{name}:{tp[0]}:{tp[1]}"


def try_lock(conn: Conn, key: str) -> bool:
    row = conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (key,)).fetchone()
    return bool(row and row[0])


def unlock(conn: Conn, key: str) -> None:
    conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))


def wait_shared(conn: Conn, key: str, stop: threading.Event) -> bool:
    """Hold ``key`` shared (beside the other instances; not beside an unsplit copy) or stop."""
    while not stop.is_set():
        row = conn.execute("SELECT pg_try_advisory_lock_shared(hashtext(%s))", (key,)).fetchone()
        if row and row[0]:
            return True
        stop.wait(1.0)
    return False


def take_partitions(conn: Conn, name: str, tps: list[TP], stop: threading.Event) -> None:
    """The locks of newly assigned partitions; an Outage if a previous owner keeps one too long."""
    todo = list(tps)
    deadline = time.monotonic() + LOCK_WAIT_S
    while todo:
        todo = [tp for tp in todo if not try_lock(conn, partition_lock(name, tp))]
        if not todo:
            return
        if stop.is_set() or time.monotonic() > deadline:
            raise Outage(f"{name}: partitions {todo[:3]} still held by their previous owner")
        stop.wait(0.2)


def release_partitions(conn: Conn, name: str, tps: list[TP]) -> None:
    for tp in tps:
        unlock(conn, partition_lock(name, tp))


def orphans(conn: Conn, name: str, me: str) -> list[str]:
    """Other owners of this processor with rows in the outbox (alive or gone: the caller tries their lock)."""
    prefix = f"{name}@"  # compared as text, not as a LIKE pattern: a name may hold "_"
    rows = conn.execute("SELECT DISTINCT processor FROM hivemem.outbox WHERE left(processor, %s) = %s "
                        "AND processor <> %s", (len(prefix), prefix, me)).fetchall()  # fmt: skip
    return sorted(str(r[0]) for r in rows)
