"""Durable gate state: claim owners (replay tuples and idempotency keys).

Modelled on eventsourcing's recorders: one interface, an in-memory backend for pure tests
and the driver, a Postgres backend for real runs, one contract test suite for both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import psycopg

from governance.gate.checks import REPLAY_WINDOW_MS, Claim, Position


class ClaimStore(Protocol):
    def claim(self, wanted: Mapping[Claim, Position], log_time: int) -> dict[Claim, Position]:
        """Record each claim unless already owned; return the owner of every wanted claim."""
        ...

    def prune(self, now_log_time: int) -> int:
        """Forget replay claims older than the replay window; return how many."""
        ...


class InMemoryClaimStore:
    def __init__(self) -> None:
        self._owners: dict[Claim, tuple[Position, int]] = {}

    def claim(self, wanted: Mapping[Claim, Position], log_time: int) -> dict[Claim, Position]:
        for c, pos in wanted.items():
            self._owners.setdefault(c, (pos, log_time))
        return {c: self._owners[c][0] for c in wanted}

    def prune(self, now_log_time: int) -> int:
        old = [c for c, (_, t) in self._owners.items()
               if c.kind == "replay" and t < now_log_time - REPLAY_WINDOW_MS]  # fmt: skip
        for c in old:
            del self._owners[c]
        return len(old)


# The wanted claims travel as five comma-joined strings split by Postgres (string_to_array): psycopg
# dumps a Python list element by element in Python, which was 14 % of the gate's CPU. Every field is
# comma-free: kinds are words, keys hex digests, topics Kafka names ([a-zA-Z0-9._-]), the rest numbers.
_WANTED = "unnest(string_to_array(%s, ','), string_to_array(%s, ','))"
_INSERT = """
INSERT INTO gate.claims (kind, key, topic, partition, "offset", log_time)
SELECT w.kind, w.key, w.topic, w.partition::int, w."offset"::bigint, %s::bigint
FROM unnest(string_to_array(%s, ','), string_to_array(%s, ','), string_to_array(%s, ','),
            string_to_array(%s, ','), string_to_array(%s, ',')) AS w(kind, key, topic, partition, "offset")
ON CONFLICT DO NOTHING
RETURNING kind, key
"""
_OWNERS = f"""
SELECT c.kind, c.key, c.topic, c.partition, c."offset"
FROM gate.claims c JOIN {_WANTED} AS w(kind, key) USING (kind, key)
"""


class PostgresClaimStore:
    """Claims in ``gate.claims`` (migration 9); the primary key makes the first claimant the
    owner. Statements run on the given connection, so inside the stream runtime they are part
    of the batch's transaction: claims commit together with the verdicts' outbox rows."""

    def __init__(self, conn: psycopg.Connection[tuple[object, ...]]) -> None:
        self._conn = conn

    def claim(self, wanted: Mapping[Claim, Position], log_time: int) -> dict[Claim, Position]:
        if not wanted:
            return {}
        items = sorted(wanted.items(), key=lambda kv: (kv[0].kind, kv[0].key))
        kinds = ",".join([c.kind for c, _ in items])
        keys = ",".join([c.key for c, _ in items])
        topics = ",".join([p.topic for _, p in items])
        if kinds.count(",") + keys.count(",") + topics.count(",") != 3 * (len(items) - 1):
            raise ValueError("a claim's kind, key or topic holds a comma")  # never from the gate's digests
        inserted = self._conn.execute(_INSERT, (log_time, kinds, keys, topics,
                                                ",".join([str(p.partition) for _, p in items]),
                                                ",".join([str(p.offset) for _, p in items]))).fetchall()  # fmt: skip
        # A claim inserted now is ours. Only the others (a duplicate, a replay, a record claimed before a crash
        # or by another instance) need their owner read: a new statement sees it once its transaction committed.
        owners = {c: p for c, p in items}
        mine = {Claim(str(r[0]), str(r[1])) for r in inserted}
        taken = [c for c in owners if c not in mine]
        for c in taken:
            del owners[c]
        if taken:
            rows = self._conn.execute(_OWNERS, (",".join([c.kind for c in taken]),
                                                ",".join([c.key for c in taken]))).fetchall()  # fmt: skip
            owners.update({Claim(str(r[0]), str(r[1])): Position(str(r[2]), int(str(r[3])), int(str(r[4])))
                           for r in rows})  # fmt: skip
        return owners

    def prune(self, now_log_time: int) -> int:
        cur = self._conn.execute("DELETE FROM gate.claims WHERE kind = 'replay' AND log_time < %s",
                                 (now_log_time - REPLAY_WINDOW_MS,))  # fmt: skip
        return cur.rowcount
