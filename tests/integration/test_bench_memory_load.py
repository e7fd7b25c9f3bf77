"""``hivemem bench memory --clients``'s phase (``bench.memory_run.run_under_load``) on the real stack: a small
generated corpus ingested through the API, its questions asked one at a time and then by three callers at once,
each with its own HTTP clients. No search fails, and every question gets the very hits it got alone."""

from __future__ import annotations

import dataclasses
import io
import uuid

import pytest
from rich.console import Console

from bench.memory_corpus import Corpus, generate
from bench.memory_run import run_mode, run_under_load
from bench.memory_sdk import open_memories, sdk_add, sdk_close, sdk_wait
from hivemem.stack import Stack

pytestmark = pytest.mark.integration

TENANT = "mem-b"


def _own(corpus: Corpus) -> Corpus:
    """The corpus with user ids of this run's own (the tenant's memories are shared with other tests)."""
    tag = uuid.uuid4().hex[:6]
    ids = {u.user_id: f"{u.user_id}-{tag}" for u in corpus.users}
    users = [dataclasses.replace(u, user_id=ids[u.user_id],
                                 sessions=[dataclasses.replace(s, user_id=ids[s.user_id]) for s in u.sessions])
             for u in corpus.users]  # fmt: skip
    questions = [dataclasses.replace(q, user_id=ids[q.user_id]) for q in corpus.questions]
    return dataclasses.replace(corpus, users=users, questions=questions)


def test_questions_under_load_get_the_hits_they_get_alone(stack: Stack) -> None:
    corpus = _own(generate(seed=11, users=2, sessions_per_user=24))
    console = Console(file=io.StringIO())
    mems = open_memories(stack.settings, TENANT, [u.user_id for u in corpus.users])
    callers = [open_memories(stack.settings, TENANT, [u.user_id for u in corpus.users]) for _ in range(3)]
    try:
        for u in corpus.users:
            added = [sdk_add(mems[u.user_id], s, 5_000) for s in u.sessions]
            assert {outcome for _, outcome in added} == {"STORED"}
            sdk_wait(mems[u.user_id], [eid for eid, _ in added], 120)
        alone = run_mode(corpus, mems, "hybrid", 10, console)
        assert not alone.errors and all(r is not None and r.hits for r in alone.results)
        loaded = run_under_load(corpus, callers, alone, 10, console)
    finally:
        for m in (mems, *callers):
            sdk_close(m)
    n = len(corpus.questions)
    assert n >= 10 and loaded.clients == 3 and not loaded.errors
    assert len(loaded.client_ms) == n and loaded.seconds > 0
    assert (loaded.compared, loaded.same) == (n, n)
