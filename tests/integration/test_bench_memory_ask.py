"""``hivemem bench memory --ask``'s section (``bench.memory_answers``) on the real stack: a small generated corpus
ingested through the API, each question with a gold answer asked through ``POST /ask`` by the SDK, its answer scored
beside the answering hit alone, per category and overall."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from bench.memory_answers import answer_share, answer_words, ask_section, run_ask
from bench.memory_corpus import generate
from bench.memory_sdk import open_memories, sdk_add, sdk_close, sdk_wait
from governance.kmms.phrasing import strip_roles
from hivemem.stack import Stack
from tests.integration.test_bench_memory_load import TENANT, _own

pytestmark = pytest.mark.integration


def test_ask_answers_are_scored_by_the_gold_words_they_hold(stack: Stack) -> None:
    corpus = _own(generate(seed=13, users=2, sessions_per_user=24))
    console = Console(file=io.StringIO())
    mems = open_memories(stack.settings, TENANT, [u.user_id for u in corpus.users])
    try:
        for u in corpus.users:
            added = [sdk_add(mems[u.user_id], s, 5_000) for s in u.sessions]
            assert {outcome for _, outcome in added} == {"STORED"}
            sdk_wait(mems[u.user_id], [eid for eid, _ in added], 120)
        run = run_ask(corpus, mems, console)
        out = Console(file=io.StringIO(), width=200)
        ask_section(corpus, mems, None, console, out, 7)
    finally:
        sdk_close(mems)
    scored = [q for q in corpus.questions if answer_words(q.answer)]
    assert len(scored) >= 10 and not run.errors and len(run.questions) == len(scored)
    for answer, alone in zip(run.answers, run.alone, strict=True):
        # ask's answer holds its answering hit's words (a generated chat's rounds are a user's and the assistant's:
        # no turns around them), after the hedging prefix and the day it was said
        assert (answer is None) == (alone is None)
        assert answer is None or alone is None or strip_roles(alone) in answer
    shares = [answer_share(a, corpus.questions[i].answer) for a, i in zip(run.answers, run.questions, strict=True)]
    assert all(0.0 <= x <= 1.0 for x in shares) and 1.0 in shares  # some answer holds every gold word
    text = out.file.getvalue()  # type: ignore[attr-defined]
    assert "7. what ask says" in text and "its answering hit alone" in text
    overall = next(line for line in text.splitlines() if "overall" in line and "HiveMem ask" in line)
    assert f"{sum(shares) / len(shares):.3f}" in overall and f" {len(shares)} " in overall  # the figure printed
