"""CLAM's LLM back-ends (inference.clam.llm) against a REAL OpenAI-compatible server: llama-cpp-python's
``llama_cpp.server`` serving SmolLM2-135M-Instruct (tests/llm/conftest.py). Run with ``bash deploy/llm_test.sh``.

SmolLM2-135M is tiny and often answers badly. What is asserted: the real server is asked; every answer the
back-end accepted is valid and grounded (re-checked here from the recorded answers, independently of the
client); when no answer was, the local back-end answered and the result says ``local:fallback``; and the clam
processor, driven with these back-ends, writes the back-end that produced each deduction and critique into
its events (so the read model, folded from those events, never asks the model again).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from contracts.avro import encode_envelope
from contracts.clam_records import decode_clam
from contracts.topics import TopicNames
from governance.clam.critic import critique_local
from governance.clam.nodes import MemoryNode
from governance.clam.perceiver import perceive_local
from governance.clam.renderer import render
from governance.clam.triples import Triple
from inference.clam.llm import (
    FALLBACK,
    ClamLlm,
    CritiqueAnswer,
    FallbackCritic,
    FallbackPerceiver,
    PerceiveAnswer,
    RenderAnswer,
    render_with_fallback,
)
from inference.llm_chat import first_json_object
from processors.clam.core import ClamDriver
from tests.helpers import offline_client
from tests.llm.conftest import CALLS, Call, LlmServer

pytestmark = [pytest.mark.llm, pytest.mark.timeout(1800)]

MAX_RETRIES = 2
REQUEST_TIMEOUT_S = 300.0
PROMPT = "Hi, my name is Marcello and I live in Milan. I use an ESP32 for the greenhouse sensors."
GRAPH = [Triple("User", "has_name", "Marcello"), Triple("User", "lives_in", "Milan")]
NODE = MemoryNode(concept_id="6f1d3b0e-5c8a-4a2b-9c7e-21d4f8a0b5e6", description="The greenhouse pump runs at night",
                  creation_timestamp=0, last_access_timestamp=0, origin_context="test", kind="semantic",
                  topic_terms=("greenhouse", "night", "pump", "run"))  # fmt: skip
T0 = 1_795_000_000_000


@dataclass
class Recorder:
    contents: list[str] = field(default_factory=list)  # the message content of every 200 answer

    def __call__(self, resp: httpx.Response) -> None:
        resp.read()
        if resp.status_code == 200:
            self.contents.append(resp.json()["choices"][0]["message"]["content"])


@pytest.fixture
def probe(llm_server: LlmServer) -> Iterator[tuple[ClamLlm, Recorder]]:
    recorder = Recorder()
    client = httpx.Client(timeout=REQUEST_TIMEOUT_S, event_hooks={"response": [recorder]})
    llm = ClamLlm(llm_server.base_url, llm_server.model, timeout_s=REQUEST_TIMEOUT_S, max_retries=MAX_RETRIES,
                  client=client)  # fmt: skip
    try:
        yield llm, recorder
    finally:
        client.close()


def _record(method: str, llm: ClamLlm, rec: Recorder, by: str) -> None:
    CALLS.append(Call(f"clam {method}", len(rec.contents), llm.refusals, "accepted" if by != FALLBACK else "fallback"))
    print(f"clam {method}: {llm.refusals} of {len(rec.contents)} answers refused -> {by}")
    for c in rec.contents:
        print(f"  {json.dumps(c)[:300]}")
    assert 1 <= len(rec.contents) <= 1 + MAX_RETRIES, "the real server was asked, no more than the retries allow"
    assert llm.refusals == len(rec.contents) - (0 if by == FALLBACK else 1)


def test_perceive_on_a_real_server(probe: tuple[ClamLlm, Recorder]) -> None:
    llm, rec = probe
    got = FallbackPerceiver(llm)(PROMPT, "Nice greenhouse!")
    by = FALLBACK if llm.refusals == 1 + MAX_RETRIES else llm.model_id
    _record("perceive", llm, rec, by)
    assert all(d.by == by for d in got)
    if by == FALLBACK:
        local = perceive_local(PROMPT, "Nice greenhouse!")
        assert [(d.kind, d.description) for d in got] == [(d.kind, d.description) for d in local]
        return
    # accepted: the last answer parses, and every fact it gave is grounded in the exchange
    answer = PerceiveAnswer.model_validate(first_json_object(rec.contents[-1]))
    exchange = " ".join(f"{PROMPT} Nice greenhouse!".casefold().split())
    for d in answer.deductions:
        if d.kind == "fact":
            assert " ".join((d.object or "").casefold().split()) in exchange
    assert len(got) == len(answer.deductions)


def test_critique_on_a_real_server(probe: tuple[ClamLlm, Recorder]) -> None:
    llm, rec = probe
    exchange = "The greenhouse pump does not run at night any more; it runs at noon."
    c = FallbackCritic(llm)(NODE, exchange, GRAPH)
    _record("critique", llm, rec, c.by)
    if c.by == FALLBACK:
        local = critique_local(NODE, exchange, GRAPH)
        assert (c.withstands, c.debate) == (local.withstands, local.debate)
    else:
        answer = CritiqueAnswer.model_validate(first_json_object(rec.contents[-1]))
        assert (c.withstands, c.debate) == (answer.withstands, answer.debate.strip()) and c.by == llm.model_id


def test_render_on_a_real_server(probe: tuple[ClamLlm, Recorder]) -> None:
    llm, rec = probe
    text, by = render_with_fallback(llm, GRAPH, "en")
    _record("render", llm, rec, by)
    if by == FALLBACK:
        assert text == render(GRAPH, "en")
    else:
        assert RenderAnswer.model_validate(first_json_object(rec.contents[-1])).text == text
        assert "marcello" in text.casefold() and "milan" in text.casefold()


def test_processor_events_name_the_back_end(probe: tuple[ClamLlm, Recorder]) -> None:
    llm, rec = probe
    driver = ClamDriver(TopicNames(), perceive=FallbackPerceiver(llm), critic=FallbackCritic(llm))
    client = offline_client("acme", "c1")
    env = client.build("clam", {"opId": "o1", "op": "PERCEIVE", "prompt": PROMPT, "response": ""})
    events = [decode_clam(o.value) for o in driver.pipe(encode_envelope(env), T0)]
    data: list[dict[str, Any]] = [json.loads(e.data) for e in events]
    made = [d for e, d in zip(events, data, strict=True) if e.kind in ("FACT_STORED", "NODE_CREATED")]
    print(f"clam processor: {[e.kind for e in events]} by {[d.get('by') for d in made]}")
    assert rec.contents, "the processor asked the real server"
    assert all(d["by"] in (llm.model_id, FALLBACK) for d in made)
