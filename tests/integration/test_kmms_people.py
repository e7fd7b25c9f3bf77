"""Through the API, a conversation between named people: each person's first-person statements become that person's
facts (``GET /api/v1/memory/facts?entity=...``), whatever their turns' roles, and none of them the owner's
(``governance.kmms.phrasing.people``, ``inference.kmms.local.sentences_for``; docs/kmms.md, Speakers)."""

from __future__ import annotations

import time
import uuid

import pytest

from hivemem.stack import Stack
from tests.integration.kmms_support import memory

pytestmark = pytest.mark.integration


def test_each_persons_facts_are_theirs(stack: Stack) -> None:
    mem = memory(stack, "mem-b", claw=f"people-{uuid.uuid4().hex[:6]}", user_id="friends")
    caroline, melanie = {"role": "user", "name": "Caroline"}, {"role": "assistant", "name": "Melanie"}
    sessions = [
        [caroline | {"content": "I live in Porto."}, melanie | {"content": "I moved to Lisbon last year."}],
        [caroline | {"content": "My flat in Porto has a view of the river."},
         melanie | {"content": "My apartment in Lisbon is tiny but bright."}],
        [caroline | {"content": "I love living in Porto, we should visit each other."},
         melanie | {"content": "Yes! Come to Lisbon in May."}],
    ]  # fmt: skip
    ids = [mem.add(turns, session_id=f"s-{i}", occurred_at=f"2026-03-0{i + 2}T09:00:00Z").episode_id
           for i, turns in enumerate(sessions)]  # fmt: skip
    mem.wait_indexed(ids, timeout_s=120)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not mem.facts(key="residence", entity="Melanie"):
        time.sleep(0.2)  # the consolidator's facts follow the episodes
    residence = {e: [h.fact_value for h in mem.facts(key="residence", entity=e)] for e in ("Caroline", "Melanie")}
    assert residence == {"Caroline": ["Porto"], "Melanie": ["Lisbon"]}
    melanies = mem.facts(key="residence", entity="Melanie")[0]
    assert melanies.text == "Melanie: I moved to Lisbon last year."  # her words, with her name
    assert mem.facts(key="residence", entity="user") == []  # neither person's home is the owner's
