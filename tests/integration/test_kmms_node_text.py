"""The derived nodes' full-text ranking (projections/kmms/nodes.py) on the real read model: BM25 over the memory's
nodes, as the units are ranked. A node holding the question's rare word comes before nodes that repeat a word most
of the memory's nodes hold; Postgres's ``ts_rank_cd``, which ranked them before, has no inverse document
frequency and put the repeated common word first."""

from __future__ import annotations

import asyncio
import uuid

import psycopg
import pytest

from hivemem.stack import Stack
from projections.kmms.config import DEFAULT
from projections.kmms.nodes import node_candidates
from projections.kmms.search import Memory
from projections.queries import tenant_tx
from tests.integration.kmms_support import app_pool

pytestmark = pytest.mark.integration

NODES = {  # node id -> content (L3 summaries of one memory)
    "n-work-1": "Work, work, work: the user talked about work deadlines and work meetings at work.",
    "n-work-2": "The user's work week: work travel and a work dinner.",
    "n-work-3": "Work again: the user asked about work email etiquette.",
    "n-dog": "The user adopted a greyhound called Biscuit.",
}
QUESTION = "what about work and my greyhound?"


def _insert(stack: Stack, tenant: str, claw: str) -> None:
    with psycopg.connect(stack.settings.require_database()) as conn:
        for i, (node_id, content) in enumerate(NODES.items()):
            conn.execute(
                "INSERT INTO kmms.kmms_nodes (tenant, claw_id, scope, node_id, layer, entity, topic, content, "
                "version, valid_from, event_time, confidence, source_ids, model, logged_at) "
                "VALUES (%s, %s, 'u', %s, 3, 'user', 'life', %s, 1, 0, %s, 0.8, %s, 'test', %s)",
                (tenant, claw, node_id, content, 1_000 + i, [f"ep-{i}"], 1_000 + i),
            )


def _text_ranking(stack: Stack, tenant: str, claw: str) -> list[str]:
    async def run() -> list[str]:
        async with app_pool(stack, max_size=1) as pool, tenant_tx(pool, tenant) as conn:
            nodes = await node_candidates(conn, Memory(tenant, claw, "u", None), None, "test", QUESTION, "text",
                                          "n.event_time <= %(as_of)s", {"as_of": 10_000}, 10, cfg=DEFAULT)  # fmt: skip
            return [n.node_id for n in nodes]

    return asyncio.run(run())


def test_a_nodes_rare_word_outranks_a_common_word_said_often(stack: Stack) -> None:
    tenant, claw = f"nodes-{uuid.uuid4().hex[:6]}", "claw-1"
    _insert(stack, tenant, claw)
    ranking = _text_ranking(stack, tenant, claw)
    assert ranking[0] == "n-dog", ranking
    assert sorted(ranking) == sorted(NODES)  # every node holding a word of the question is a candidate
    # another memory's nodes are not this one's candidates
    assert _text_ranking(stack, tenant, "claw-2") == []
