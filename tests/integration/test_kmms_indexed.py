"""``/memory/indexed`` on the real read model (``projections.kmms.queries.INDEXED``), in a transaction rolled back: an
episode is searchable when its units and the nodes derived from it have their vectors, except a node with no text to
embed, which never gets one (an empty summary, as the consolidator wrote before 2026-11-29 for a window where the
owner said nothing)."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from hivemem.stack import Stack
from projections.kmms.queries import INDEXED

pytestmark = pytest.mark.integration

MODEL = "indexed-test"
VEC = "[" + ",".join(["0.05"] * 384) + "]"


def test_a_node_with_no_text_to_embed_does_not_hold_its_episode_back(stack: Stack) -> None:
    t, c, s = f"indexed-{uuid.uuid4().hex[:6]}", "claw-i", "user-i"
    # episode -> its derived node (content, fact key), with or without the node's vector
    cases = {"ep-empty-summary": ("", None, False), "ep-summary-waiting": ("a summary", None, False),
             "ep-summary-embedded": ("a summary", "", True), "ep-fact-waiting": ("", "residence", False)}  # fmt: skip
    with psycopg.connect(stack.settings.require_database()) as conn, conn.transaction(force_rollback=True):
        for i, (episode, (content, key, embedded)) in enumerate(cases.items()):
            conn.execute(
                "INSERT INTO kmms.kmms_units (tenant, claw_id, scope, unit_id, episode_id, session_id, thread_id, "
                "ordinal, text, occurred_at, logged_at) VALUES (%s, %s, %s, %s, %s, %s, '', 0, 'a walk', 1000, 1000)",
                (t, c, s, f"{episode}#0", episode, f"s-{i}"))  # fmt: skip
            layer = 2 if key else 3
            conn.execute(
                "INSERT INTO kmms.kmms_nodes (tenant, claw_id, scope, node_id, layer, entity, topic, content, "
                "fact_key, version, valid_from, event_time, confidence, source_ids, model, logged_at) VALUES "
                "(%s, %s, %s, %s, %s, 'user', 't', %s, %s, 1, 1000, 1000, 0.9, %s, 'local', 1000)",
                (t, c, s, f"n-{episode}", layer, content, key or None, [episode]))  # fmt: skip
            units = [f"{episode}#0", *([f"n-{episode}"] if embedded else [])]
            for unit in units:
                conn.execute(
                    "INSERT INTO kmms.kmms_vectors (unit_id, model, tenant, claw_id, scope, kind, embedding) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s::vector)",
                    (unit, MODEL, t, c, s, "unit" if unit.endswith("#0") else "node", VEC))  # fmt: skip
        rows = conn.execute(INDEXED, {"model": MODEL, "t": t, "c": c, "s": s, "ids": list(cases)}).fetchall()
    assert sorted(r[0] for r in rows) == ["ep-empty-summary", "ep-summary-embedded"]
