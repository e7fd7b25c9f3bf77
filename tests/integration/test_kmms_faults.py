"""The kmms service's two processes (write path, enricher, consolidator; embedder) SIGKILLed mid-stream: every
episode judged once, every unit embedded once, consolidation without gaps or repeats, and the
KMMS read model equal to a clean replay of the log."""

from __future__ import annotations

import time
import uuid

import pytest

from hivemem.services import projections
from hivemem.stack import Stack
from projections.replay import rebuild
from tests.conftest import wait_until
from tests.integration.support import client, kill_and_restart, owner_db

pytestmark = pytest.mark.integration
DAY = 86_400_000
TOPICS = [
    "I moved to {city} and I love the tram rides to the office.",
    "At work we are migrating the billing jobs from Postgres to DuckDB, sprint {n}.",
    "My favourite editor is {editor}; I use it for every Python project.",
    "For dinner I cooked a mushroom risotto, recipe {n} from the blue book.",
]


def _count(stack: Stack, sql: str, *args: object) -> int:
    with owner_db(stack) as conn:
        row = conn.execute(sql, args).fetchone()  # type: ignore[arg-type]
    return int(str(row[0])) if row else 0


def test_kmms_service_sigkilled_mid_stream(stack: Stack) -> None:
    tenant, n, tag = "mem-kill", 160, uuid.uuid4().hex[:6]
    claws = [client(stack, f"kill-{tag}-{i}", tenant=tenant) for i in range(4)]
    # Both KMMS processes: the write path, enrichment and consolidation, and the embedders (hivemem.stack).
    killers = [
        kill_and_restart(stack.services[name], after) for name, after in (("kmms", 0.5), ("kmms-embedders", 1.0))
    ]
    t0 = 1_767_225_600_000  # 2026-01-01
    cities, editors = ["Lisbon", "Porto", "Braga"], ["Vim", "Helix", "Emacs"]
    for i in range(n):
        c = claws[i % len(claws)]
        text = TOPICS[i % len(TOPICS)].format(city=cities[i % 3], n=i, editor=editors[i % 3])
        turns = [{"role": "user", "content": f"{text} (note {tag}-{i})"},
                 {"role": "assistant", "content": "Got it, I will remember that."}]  # fmt: skip
        env = c.build("episode", {
            "episodeId": f"ep-{tag}-{i}", "about": "memory", "content": "\n".join(
                f"{t['role']}: {t['content']}" for t in turns), "occurredAt": t0 + i * DAY // 2,
            "sessionId": f"s-{tag}-{i}", "userId": f"u{i % 2}", "contentType": "CONVERSATION",
            "turns": turns}, trace_id=f"kill-{tag}")  # fmt: skip
        c.publish_envelope_async(env, lambda tok, err: None)
        if i == n // 4:
            for killer in killers:
                killer.start()
        if i % 40 == 0:
            time.sleep(0.05)
    for c in claws:
        assert c.flush(120) == 0
    for killer in killers:
        killer.join()

    stored = "SELECT count(*) FROM kmms.kmms_episodes WHERE tenant = %s AND episode_id LIKE %s"
    wait_until(lambda: _count(stack, stored, tenant, f"ep-{tag}-%") >= n, timeout=240, interval=1, what="stored")
    units = ("SELECT count(*) FROM kmms.kmms_units u JOIN kmms.kmms_vectors v ON v.tenant = u.tenant AND "
             "v.unit_id = u.unit_id WHERE u.tenant = %s AND u.episode_id LIKE %s")  # fmt: skip
    wait_until(lambda: _count(stack, units, tenant, f"ep-{tag}-%") >= n, timeout=240, interval=1, what="embedded")
    enriched = ("SELECT count(*) FROM kmms.kmms_episodes WHERE tenant = %s AND episode_id LIKE %s "
                "AND primary_topic IS NOT NULL")  # fmt: skip
    wait_until(lambda: _count(stack, enriched, tenant, f"ep-{tag}-%") >= n, timeout=240, interval=1, what="enriched")
    time.sleep(2)
    assert _count(stack, stored, tenant, f"ep-{tag}-%") == n
    assert _count(stack, units, tenant, f"ep-{tag}-%") == n  # one round per episode, one vector each
    # Exactly one verdict per envelope in the audit (the gate's ACCEPTED; no PROCESSING_ERROR).
    assert _count(stack, "SELECT count(*) FROM audit.events WHERE tenant = %s AND trace_id = %s AND outcome = "
                  "'REJECTED'", tenant, f"kill-{tag}") == 0  # fmt: skip
    # Consolidation happened and its version chains have no gaps or repeats.
    assert _count(stack, "SELECT count(*) FROM kmms.kmms_nodes WHERE tenant = %s AND layer = 3", tenant) > 0
    assert _count(stack, "SELECT count(*) FROM (SELECT claw_id, scope, entity, topic, time_window FROM kmms.kmms_nodes "
                  "WHERE tenant = %s AND layer = 3 GROUP BY 1, 2, 3, 4, 5 HAVING count(*) <> max(version) "
                  "OR count(*) FILTER (WHERE status = 'CURRENT') <> 1) g", tenant) == 0  # fmt: skip
    s = stack.settings
    result = rebuild(projections(s)["kmms"], s.require_kafka(), s.require_database(), s.topics)
    assert result.equal and result.records > 0, result.describe()
