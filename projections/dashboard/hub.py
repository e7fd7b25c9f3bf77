"""The fan-out hub: one LISTEN connection per API process, pushes to the dashboards of the tenant
a change concerns.

A notification names a table and the tenants its statement touched (migration.py). The hub marks
(tenant, area) for every connected tenant among them; the coalescer makes that due at once, or at
the end of the ~100 ms window after the previous push of the same key. When a key is due the hub
reads that area's snapshot once, as the tenant (row-level security), and hands the same JSON text
to every dashboard of the tenant. Nothing here asks the database on a timer: the only timer wakes
the flusher for keys a notification already marked.

Each dashboard keeps only the newest message per area until its socket takes it, so a slow browser
gets fewer, fresher messages and never holds the hub up.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from projections.dashboard.coalesce import Coalescer, Key, parse_change
from projections.dashboard.migration import CHANNEL
from projections.dashboard.snapshots import SNAPSHOTS, snapshot

log = logging.getLogger("hivemem.dashboard")

SnapshotFn = Callable[[AsyncConnectionPool, str, str], Awaitable[Any]]
LISTEN_WAIT_S = 10.0  # a dashboard waits this long for the LISTEN connection before its first snapshot
MAX_CONCURRENT_SNAPSHOTS = 4  # of the API's pool of 8: HTTP reads keep the rest


def message(area: str, data: Any) -> str:
    return json.dumps({"area": area, "data": data}, separators=(",", ":"), default=str)


class Client:
    """One connected dashboard: its tenant and the newest unsent message per area."""

    def __init__(self, tenant: str) -> None:
        self.tenant = tenant
        self._pending: dict[str, str] = {}
        self._seq: dict[str, int] = {}  # per area, the newest snapshot offered (by query start)
        self._wake = asyncio.Event()

    def offer(self, area: str, seq: int, text: str) -> None:
        # Two reads of one area may finish out of order: keep the one that started last.
        if seq < self._seq.get(area, -1):
            return
        self._seq[area] = seq
        self._pending[area] = text
        self._wake.set()

    async def next_messages(self) -> list[str]:
        """Wait for at least one message; take all that are pending."""
        await self._wake.wait()
        self._wake.clear()
        out = list(self._pending.values())
        self._pending.clear()
        return out


@dataclass
class HubStats:
    notifications: int = 0  # NOTIFY payloads received
    snapshots: int = 0  # area reads
    messages: int = 0  # messages handed to dashboards


class Hub:
    def __init__(self, listen_url: str, pool: AsyncConnectionPool, window_s: float = 0.1,
                 snapshot_fn: SnapshotFn = snapshot) -> None:  # fmt: skip
        self._url = listen_url
        self._pool = pool
        self._snapshot = snapshot_fn
        self._coalescer = Coalescer(window_s)
        self._clients: dict[str, set[Client]] = {}
        self._seq = itertools.count()
        self._wake = asyncio.Event()
        self._listening = asyncio.Event()
        self._limit = asyncio.Semaphore(MAX_CONCURRENT_SNAPSHOTS)
        self._tasks: list[asyncio.Task[None]] = []
        self._pushes: set[asyncio.Task[None]] = set()
        self.stats = HubStats()

    # -- dashboards -------------------------------------------------------------------------

    async def join(self, tenant: str) -> Client:
        """Register a dashboard and queue the first snapshot of every area for it.

        Started lazily: an API process nobody watches holds no LISTEN connection. LISTEN is up
        before the first snapshots are read, so no change falls between the two."""
        self._start()
        await asyncio.wait_for(self._listening.wait(), LISTEN_WAIT_S)
        client = Client(tenant)
        self._clients.setdefault(tenant, set()).add(client)
        try:
            for area in SNAPSHOTS:
                seq = next(self._seq)
                async with self._limit:
                    data = await self._snapshot(self._pool, tenant, area)
                client.offer(area, seq, message(area, data))
        except BaseException:
            self.leave(client)
            raise
        return client

    def leave(self, client: Client) -> None:
        clients = self._clients.get(client.tenant)
        if clients is None:
            return
        clients.discard(client)
        if not clients:
            del self._clients[client.tenant]
            self._coalescer.forget(client.tenant)

    def connected(self) -> int:
        return sum(len(c) for c in self._clients.values())

    # -- notifications ----------------------------------------------------------------------

    def notified(self, payload: str) -> None:
        """One NOTIFY payload: mark the concerned (tenant, area) keys and wake the flusher."""
        self.stats.notifications += 1
        change = parse_change(payload)
        if change is None:
            return
        tenants = self._clients.keys() if change.tenants is None else change.tenants
        now = asyncio.get_running_loop().time()
        marked = False
        for tenant in list(tenants):
            if tenant in self._clients:  # nobody watching this tenant: nothing to read
                for area in change.areas:
                    self._coalescer.mark((tenant, area), now)
                    marked = True
        if marked:
            self._wake.set()

    def _mark_everything(self) -> None:
        now = asyncio.get_running_loop().time()
        for tenant in self._clients:
            for area in SNAPSHOTS:
                self._coalescer.mark((tenant, area), now)
        self._wake.set()

    def _start(self) -> None:
        if not self._tasks:
            self._tasks = [asyncio.create_task(self._listen(), name="dashboard-listen"),
                           asyncio.create_task(self._flush(), name="dashboard-flush")]  # fmt: skip

    async def _listen(self) -> None:
        backoff, first = 0.5, True
        while True:
            try:
                async with await AsyncConnection.connect(self._url, autocommit=True) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    if not first:  # changes while the connection was down were not heard: refresh all
                        self._mark_everything()
                    first, backoff = False, 0.5
                    self._listening.set()
                    async for note in conn.notifies():
                        self.notified(note.payload)
            except (psycopg.Error, OSError) as exc:
                self._listening.clear()
                log.warning("dashboard LISTEN connection lost (%s); reconnecting in %.1f s", exc, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10.0)

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due_at = self._coalescer.next_due()
            if due_at is None:
                await self._wake.wait()
            elif due_at > loop.time():
                # Only wakes for keys a notification marked: flushing, not polling.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), due_at - loop.time())
            self._wake.clear()
            for key in self._coalescer.take_due(loop.time()):
                task = asyncio.create_task(self._push(key))
                self._pushes.add(task)
                task.add_done_callback(self._pushes.discard)

    async def _push(self, key: Key) -> None:
        tenant, area = key
        if not self._clients.get(tenant):
            return
        seq = next(self._seq)
        try:
            async with self._limit:
                data = await self._snapshot(self._pool, tenant, area)
        except Exception:  # a failed read must not end the hub; the next change pushes again
            log.exception("dashboard snapshot %s for %s failed", area, tenant)
            return
        self.stats.snapshots += 1
        text = message(area, data)
        for client in list(self._clients.get(tenant, ())):
            client.offer(area, seq, text)
            self.stats.messages += 1

    async def close(self) -> None:
        for task in [*self._tasks, *self._pushes]:
            task.cancel()
        for task in [*self._tasks, *self._pushes]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []
