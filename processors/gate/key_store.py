"""Durable registry of claws' Ed25519 keys, written by the gate as it accepts ``identity``
envelopes and read by it to verify signatures. Same shape as the claim store: one
interface, an in-memory backend, a Postgres backend, one contract test suite."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import psycopg

from governance.keyring import ClawKey

KeyId = tuple[str, str, str]  # tenant, claw, key id


class KeyStore(Protocol):
    def get(self, tenant: str, claw_id: str, key_id: str) -> ClawKey | None: ...

    def put(self, keys: Iterable[ClawKey]) -> None:
        """Insert or replace these key records (durably, before the gate emits its verdicts)."""
        ...


class InMemoryKeyStore:
    def __init__(self) -> None:
        self._keys: dict[KeyId, ClawKey] = {}

    def get(self, tenant: str, claw_id: str, key_id: str) -> ClawKey | None:
        return self._keys.get((tenant, claw_id, key_id))

    def put(self, keys: Iterable[ClawKey]) -> None:
        for k in keys:
            self._keys[(k.tenant, k.claw_id, k.key_id)] = k


_COLUMNS = "tenant, claw_id, key_id, public_key, registered_at, retired_at, revoked_at"


class PostgresKeyStore:
    """``gate.claw_keys`` (migration 9), cached in memory. One gate instance writes it (the
    runtime's advisory lock), so the cache only misses for keys it has not seen yet. The
    runtime builds a new store (an empty cache) after every rollback."""

    def __init__(self, conn: psycopg.Connection[tuple[object, ...]]) -> None:
        self._conn = conn
        self._cache: dict[KeyId, ClawKey] = {}

    def get(self, tenant: str, claw_id: str, key_id: str) -> ClawKey | None:
        k = (tenant, claw_id, key_id)
        if k not in self._cache:
            row = self._conn.execute(f"SELECT {_COLUMNS} FROM gate.claw_keys WHERE tenant = %s AND claw_id = %s "
                                     "AND key_id = %s", k).fetchone()  # fmt: skip
            if row is None:
                return None
            self._cache[k] = ClawKey(*row)  # type: ignore[arg-type]
        return self._cache[k]

    def put(self, keys: Iterable[ClawKey]) -> None:
        rows = [(k.tenant, k.claw_id, k.key_id, k.public_key, k.registered_at, k.retired_at, k.revoked_at)
                for k in keys]  # fmt: skip
        if not rows:
            return
        with self._conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO gate.claw_keys ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (tenant, claw_id, key_id) DO UPDATE SET retired_at = excluded.retired_at, "
                "revoked_at = excluded.revoked_at",
                rows,
            )
        for r in rows:
            self._cache[(r[0], r[1], r[2])] = ClawKey(*r)  # type: ignore[arg-type]
