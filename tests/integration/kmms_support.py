"""Helpers for the KMMS integration tests: one memory client per (tenant, claw, user)."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

from psycopg_pool import AsyncConnectionPool

from governance.kmms.search_config import SearchConfig
from hivemem.settings import search_config_from_env
from hivemem.stack import Stack
from producers.memory_client import Hit, MemoryClient, SearchResult
from projections.auth import mint_token
from projections.queries import app_pool as open_app_pool
from tests.conftest import wait_until


def memory(stack: Stack, tenant: str, claw: str | None = None, user_id: str = "") -> MemoryClient:
    token = mint_token(stack.settings.load_config().token_secret, tenant, "test", claw or f"m-{uuid.uuid4().hex[:6]}")
    return MemoryClient(stack.api_url, token, user_id=user_id, timeout_s=60)


NOTED = "Noted, thanks for telling me."  # the assistant's reply in a session told by ``tell``


def chat(user: str, reply: str = NOTED) -> list[dict[str, str]]:
    return [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]


def converse(mem: MemoryClient, history: Sequence[tuple[str, str, str]]) -> list[str]:
    """Each (day, what the user said, the assistant's reply) of ``history`` as a session of its own, ``s-<i>`` at
    09:00 that day; the episode ids."""
    return [mem.add(chat(said, reply), session_id=f"s-{i}", occurred_at=f"{day}T09:00:00Z").episode_id
            for i, (day, said, reply) in enumerate(history)]  # fmt: skip


def tell(mem: MemoryClient, history: list[tuple[str, str]]) -> list[str]:
    """Each (day, what the user said) of ``history`` as a session of its own (``converse``, the default reply)."""
    return converse(mem, [(day, text, NOTED) for day, text in history])


def conversed(stack: Stack, claw: str, user_id: str, history: Sequence[tuple[str, str, str]]) -> MemoryClient:
    """The memory of ``claw`` and ``user_id`` in tenant mem-b, told ``history`` (``converse``), once every episode
    is searchable."""
    mem = memory(stack, "mem-b", claw=claw, user_id=user_id)
    mem.wait_indexed(converse(mem, history), timeout_s=120)
    return mem


@asynccontextmanager
async def app_pool(stack: Stack, max_size: int = 1) -> AsyncIterator[AsyncConnectionPool]:
    """A pool on the application role, as the API opens it (row-level security, statements prepared after a few
    runs: ``projections.queries.app_pool``), with its first connection ready: whether it has one to spare is then
    not a race."""
    settings = stack.settings
    pool = open_app_pool(settings.app_database_url(settings.load_config()), min_size=1, max_size=max_size)
    await pool.open(wait=True)
    try:
        yield pool
    finally:
        await pool.close()


def told_with_fact(stack: Stack, user_id: str, history: list[tuple[str, str]], value: str,
                   claw: str | None = None) -> MemoryClient:  # fmt: skip
    """A new memory (tenant mem-b) told ``history`` (``tell``), once a fact of ``value`` is read from it and every
    episode is searchable."""
    mem = memory(stack, "mem-b", claw=claw or f"viewer-{uuid.uuid4().hex[:6]}", user_id=user_id)
    ids = tell(mem, history)
    wait_until(lambda: bool(facts_of(mem, value)), timeout=120, interval=0.5, what=f"the fact {value!r}")
    mem.wait_indexed(ids, timeout_s=120)
    return mem


def facts_of(mem: MemoryClient, value: str) -> list[Hit]:
    """The memory's L2 facts (every version) whose value holds ``value``."""
    return [f for f in mem.facts(history=True) if f.layer == 2 and value in (f.fact_value or "")]


def fact_hit(res: SearchResult, value: str) -> tuple[int, Hit]:
    """The first L2 node of the result's context whose value holds ``value``, with its place there."""
    return next((i, h) for i, h in enumerate(res.context) if h.layer == 2 and value in (h.fact_value or ""))


async def unit_vectors(conn: Any, claw: str, n: int) -> tuple[str, list[list[float]]]:
    """The model and the first ``n`` stored vectors (by id) of the rounds of claw ``claw`` in tenant mem-b, read on
    ``conn`` (a tenant transaction of mem-b): real vectors to search with, no embedder in the test process."""
    cur = await conn.execute("SELECT v.model, v.embedding::text FROM kmms.kmms_vectors v JOIN kmms.kmms_units u "
                             "ON u.tenant = v.tenant AND u.unit_id = v.unit_id WHERE v.tenant = 'mem-b' AND "
                             "u.claw_id = %s ORDER BY v.unit_id LIMIT %s", (claw, n))  # fmt: skip
    rows = await cur.fetchall()
    return str(rows[0][0]), [[float(x) for x in str(v).strip("[]").split(",")] for _, v in rows]


def with_changes(**changes: Any) -> SearchConfig:
    """The search's settings of this process's environment (as the API reads its own at start), with ``changes``
    (SearchConfig fields, e.g. ``text_neighbours=False``) made."""
    return replace(search_config_from_env(os.environ), **changes)


def search_in_process(stack: Stack, claw: str, user_id: str, question: str, k: int, as_of: str, *,
                      mode: str = "hybrid", tenant: str = "mem-b", changes: dict[str, Any] | None = None,
                      tokens: bool = True) -> Any:  # fmt: skip
    """``question`` searched as the API would (the question embedded here by the same model, without the memory's
    speakers' names, with its token states unless not ``tokens``), with ``changes`` made to the settings
    (``with_changes``): a ``projections.kmms.queries`` SearchResult (times in epoch ms)."""

    async def run() -> Any:
        async with app_pool(stack, max_size=2) as pool:
            return await search_on(pool, claw, user_id, question, k, as_of, mode=mode, tenant=tenant, changes=changes,
                                   tokens=tokens)  # fmt: skip

    return asyncio.run(run())


async def search_on(pool: AsyncConnectionPool, claw: str, user_id: str, question: str, k: int, as_of: str, *,
                    mode: str = "hybrid", tenant: str = "mem-b", changes: dict[str, Any] | None = None,
                    tokens: bool = True) -> Any:  # fmt: skip
    """``search_in_process``'s search, on a pool the caller holds (``app_pool``)."""
    from datetime import datetime

    from hivemem.caml_wiring import embedder
    from inference.embedding_base import TokenStatesEmbedder
    from projections.kmms import queries as q
    from projections.kmms.search import Memory
    from projections.kmms.speakers import embedded_question

    emb = embedder()
    at = int(datetime.fromisoformat(as_of.replace("Z", "+00:00")).timestamp() * 1000)
    cfg = with_changes(**(changes or {}))
    m = Memory(tenant, claw, user_id)
    text = await embedded_question(pool, m, q.content_query(question, at), cfg.speaker_names)
    assert isinstance(emb, TokenStatesEmbedder)  # the bundled MiniLM, as the stack runs it
    vector, states = (None, None) if mode == "text" else emb.query_with_tokens(text)
    params = q.SearchParams(question, vector, emb.model_id, k, at, mode,  # type: ignore[arg-type]
                            tokens=states if mode == "hybrid" and tokens else None)  # fmt: skip
    return await q.search(pool, m, params, cfg)
