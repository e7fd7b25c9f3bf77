"""Erasing a memory through the real pipeline: HTTP -> erasure envelope -> gate -> kmms processor ->
MEMORY_ERASED -> read model (and the consolidator's state). Everything the user told before leaves
search, facts, the L0 index and every table; another user's memory is untouched; telling it again
starts a new memory (no DUPLICATE_CONTENT against erased text)."""

from __future__ import annotations

import uuid

import pytest

from hivemem.services import projections
from hivemem.stack import Stack
from producers.memory_client import MemoryClient, MemoryError_
from projections.replay import rebuild
from tests.conftest import wait_until
from tests.integration.kmms_support import chat, memory, tell
from tests.integration.support import owner_db

pytestmark = pytest.mark.integration

TOLD = [
    ("2026-01-10", "I live in Lisbon, in a small flat near the river."),
    ("2026-02-07", "My flat in Lisbon has a tiny balcony where I grow basil."),
    ("2026-04-20", "I moved to Porto last week and the new apartment is bigger."),
    ("2026-05-02", "I live in Porto now and I cycle to work along the river."),
]
TABLES = ("kmms_episodes", "kmms_units", "kmms_nodes", "kmms_l0", "kmms_vectors", "kmms_contradictions")


def _rows(stack: Stack, tenant: str, claw: str, user: str) -> dict[str, int]:
    with owner_db(stack) as conn:
        return {t: int(str((conn.execute(f"SELECT count(*) FROM kmms.{t} WHERE tenant = %s AND claw_id = %s AND "
                                         "scope = %s", (tenant, claw, user)).fetchone() or (0,))[0]))
                for t in TABLES}  # fmt: skip


def _told(mem: MemoryClient) -> list[str]:
    ids = tell(mem, TOLD)
    wait_until(lambda: any("Porto" in (f.fact_value or "") for f in mem.facts("residence")), timeout=120,
               interval=0.3, what="the residence fact")  # fmt: skip
    mem.wait_indexed(ids, timeout_s=120)
    return ids


def test_erase_removes_everything_told_before_and_only_that(stack: Stack) -> None:
    claw, user = f"assistant-{uuid.uuid4().hex[:6]}", f"ana-{uuid.uuid4().hex[:4]}"
    mem = memory(stack, "mem-a", claw=claw, user_id=user)
    other = memory(stack, "mem-a", claw=claw, user_id=user + "-b")
    _told(mem)
    kept = other.add(chat("I live in Lisbon, in a small flat near the river."), session_id="o-1").episode_id
    other.wait_indexed([kept], timeout_s=60)
    before = _rows(stack, "mem-a", claw, user)
    assert before["kmms_episodes"] == 4 and before["kmms_nodes"] > 0 and before["kmms_vectors"] > 0

    done = mem.erase(reason="user request #1")
    assert done.status == "ERASED" and done.erased_at is not None
    assert [(e.erasure_id, e.reason) for e in mem.erasures()] == [(done.erasure_id, "user request #1")]
    assert _rows(stack, "mem-a", claw, user) == dict.fromkeys(TABLES, 0)
    gone = mem.search("Where do I live now?", k=10)
    assert gone.hits == [] and gone.context == []
    assert mem.facts() == [] and mem.entities() == []
    assert mem.ask("Where do I live?").answer is None

    # The other user's memory still answers, with its own copy of the same words.
    hits = other.search("Where do I live?", k=5).hits
    assert any(h.layer == 4 and h.episode_id == kept for h in hits)

    # Told again: a new memory, not a duplicate of erased text; the erased past does not come back.
    again = mem.add(chat(TOLD[0][1]), session_id="s-again", occurred_at="2026-06-01T09:00:00Z")
    assert again.status == "STORED"
    mem.wait_indexed([again.episode_id], timeout_s=60)
    with owner_db(stack) as conn:
        stale = conn.execute(
            "SELECT count(*) FROM kmms.kmms_units WHERE tenant = 'mem-a' AND claw_id = %s AND scope = %s "
            "AND episode_id <> %s", (claw, user, again.episode_id)).fetchone()  # fmt: skip
    assert stale == (0,)
    assert [h.session_id for h in mem.search("small flat near the river", k=5).hits if h.layer == 4] == ["s-again"]

    # A replay of the log (episodes, erasure, vectors computed before it) rebuilds the same erased model.
    s = stack.settings
    result = rebuild(projections(s)["kmms"], s.require_kafka(), s.require_database(), s.topics)
    assert result.equal and result.records > 0, result.describe()
    assert _rows(stack, "mem-a", claw, user)["kmms_episodes"] == 1
    # The live tables' own indexes were dropped for the copy and built again: the search's text and HNSW indexes.
    with owner_db(stack) as conn:
        indexes = {str(r[0]): str(r[1]) for r in conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'kmms'")}  # fmt: skip
    assert {"kmms_units_tsv", "kmms_nodes_tsv", "kmms_units_scope"} <= set(indexes)
    assert any("USING hnsw" in d for d in indexes.values())


def test_erase_needs_a_claw_token_and_clean_input(stack: Stack) -> None:
    mem = memory(stack, "mem-a", user_id="u-x")
    with pytest.raises(MemoryError_) as e:
        mem._call("POST", "/api/v1/memory/erase", json={"userId": "u-x", "reason": "a\x00b"})
    assert (e.value.status, e.value.code) == (422, "INVALID_REQUEST")
    with pytest.raises(MemoryError_) as e:
        mem._call("POST", "/api/v1/memory/erase", json={"userId": "u-x", "extra": 1})
    assert e.value.status == 422
    # Erasing an empty memory is fine: an erasure record, nothing else.
    assert mem.erase().status == "ERASED" and len(mem.erasures()) == 1
