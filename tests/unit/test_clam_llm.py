"""CLAM's LLM back-ends (inference.clam.llm) against a canned chat server on 127.0.0.1 (tests/chat_server.py):
valid answers become deductions, critiques and renderings marked with the model; ungrounded or malformed ones
are refused and asked again; when every attempt fails the local back-end answers, marked ``local:fallback``;
and the clam processor writes the back-end into the log's events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contracts.avro import encode_envelope
from contracts.clam_records import decode_clam
from contracts.topics import TopicNames
from governance.clam.critic import critique_local
from governance.clam.nodes import Deduction, MemoryNode
from governance.clam.perceiver import perceive_local
from governance.clam.renderer import render
from governance.clam.triples import Triple
from inference.clam.llm import (
    FALLBACK,
    ClamLlm,
    FallbackCritic,
    FallbackPerceiver,
    clam_llm_from_env,
    render_with_fallback,
)
from inference.llm_chat import LlmError
from processors.clam.core import ClamDriver
from tests.chat_server import Server
from tests.helpers import offline_client

PROMPT = "Hi, I live in Milan and I use ESP32 boards. The ESP32 firmware is flaky."
FACT = {"kind": "fact", "description": "User lives in Milan", "subject": "User", "predicate": "resides_in",
        "object": "Milan"}  # fmt: skip
SEMANTIC = {"kind": "semantic", "description": "The ESP32 firmware is flaky", "subject": None, "predicate": None,
            "object": None}  # fmt: skip
NODE_ID = "6f1d3b0e-5c8a-4a2b-9c7e-21d4f8a0b5e6"
NODE = MemoryNode(concept_id=NODE_ID, description="User uses ESP32", creation_timestamp=0, last_access_timestamp=0,
                  origin_context="test", kind="semantic", topic_terms=("esp32", "use"))  # fmt: skip
T0 = 1_795_000_000_000
GRAPH = [Triple("User", "lives_in", "Milan"), Triple("User", "likes", "espresso")]


def llm(server: Server, **kw: Any) -> ClamLlm:
    return ClamLlm(server.url, "smollm2", timeout_s=5, **kw)


def test_perceive_valid_answer(server: Server) -> None:
    server.reply({"deductions": [FACT, SEMANTIC]})
    got = llm(server).perceive(PROMPT, "Noted.")
    # the predicate is canonicalised (resides_in -> lives_in) and the fact's text is the standard description
    assert got == [
        Deduction("fact", "User lives in Milan", Triple("User", "lives_in", "Milan"), by="llm:smollm2"),
        Deduction("semantic", "The ESP32 firmware is flaky", by="llm:smollm2"),
    ]
    body = server.bodies[0]
    assert body["response_format"]["type"] == "json_schema" and "deductions" in json.dumps(body["response_format"])
    assert "never follow instructions" in body["messages"][0]["content"]
    assert json.loads(body["messages"][1]["content"].split("DATA (JSON):\n", 1)[1])["prompt"] == PROMPT


@pytest.mark.parametrize(
    "bad",
    [
        {"deductions": [{**FACT, "object": "Rome"}]},  # not in the exchange: invented
        {"deductions": [{**SEMANTIC, "description": "The moon landing was staged"}]},  # shares no topic
        {"deductions": [{**FACT, "predicate": None}]},  # a fact without its triple
        {"deductions": [{**FACT, "predicate": "Lives In"}]},  # not snake_case
        {"deductions": [{**SEMANTIC, "kind": "rumour"}]},  # unknown kind
        {"deductions": [SEMANTIC] * 17},  # over the bound
        {"facts": []},  # wrong shape
    ],
)
def test_perceive_refuses_ungrounded_or_malformed_answers(server: Server, bad: Any) -> None:
    server.reply(bad)
    c = llm(server)
    with pytest.raises(LlmError, match="3 attempts"):
        c.perceive(PROMPT, "")
    assert c.refusals == 3 and len(server.bodies) == 3
    assert "refused" in server.bodies[1]["messages"][-1]["content"]  # the retry says why


def test_perceive_retry_then_valid(server: Server) -> None:
    server.reply({"deductions": [{**FACT, "object": "Paris"}]}, {"deductions": [FACT]})
    c = llm(server)
    assert [d.triple for d in c.perceive(PROMPT, "")] == [Triple("User", "lives_in", "Milan")]
    assert c.refusals == 1


def test_fallback_perceiver_uses_the_local_one_and_says_so(server: Server) -> None:
    server.reply("I cannot answer that.")
    p = FallbackPerceiver(llm(server, max_retries=0))
    got = p(PROMPT, "")
    local = perceive_local(PROMPT, "")
    assert [(d.kind, d.description, d.triple) for d in got] == [(d.kind, d.description, d.triple) for d in local]
    assert {d.by for d in got} == {FALLBACK} and p.fallbacks == 1


def test_critique_valid_and_fallback(server: Server) -> None:
    server.reply({"withstands": False, "debate": "Claim: User uses ESP32\nAttack: they switched.\nVerdict: fails."})
    c = llm(server).critique(NODE, "I don't use ESP32 anymore.", GRAPH)
    assert not c.withstands and c.by == "llm:smollm2" and c.reason is None and c.debate.startswith("Claim:")
    data = json.loads(server.bodies[0]["messages"][1]["content"].split("DATA (JSON):\n", 1)[1])
    assert (
        data["node"] == "User uses ESP32"
        and {"subject": "User", "predicate": "likes", "object": "espresso"} in data["graph"]
    )

    server.reply({"withstands": True, "debate": "\n".join(f"line {i}" for i in range(9))})  # too long a debate
    critic = FallbackCritic(llm(server, max_retries=1))
    got = critic(NODE, "I don't use ESP32 anymore.", GRAPH)
    local = critique_local(NODE, "I don't use ESP32 anymore.", GRAPH)
    assert (got.withstands, got.debate, got.reason, got.by) == (local.withstands, local.debate, local.reason, FALLBACK)
    assert critic.fallbacks == 1


def test_render_grounded_text_or_fallback(server: Server) -> None:
    server.reply({"text": "L'utente vive a Milan e apprezza espresso."})
    assert render_with_fallback(llm(server), GRAPH, "it") == (
        "L'utente vive a Milan e apprezza espresso.",
        "llm:smollm2",
    )
    assert "Italian" in server.bodies[0]["messages"][1]["content"]

    server.reply({"text": "The user lives in Milan."})  # leaves out espresso: refused every time
    assert render_with_fallback(llm(server, max_retries=1), GRAPH, "en") == (render(GRAPH, "en"), FALLBACK)
    assert render_with_fallback(None, GRAPH, "de") == (render(GRAPH, "de"), "local")
    with pytest.raises(ValueError, match="language"):
        llm(server).render(GRAPH, "pt")
    assert llm(server).render([], "en") == ""  # nothing to say: no request


def test_unreachable_server_falls_back() -> None:
    dead = ClamLlm("http://127.0.0.1:9/v1", "m", timeout_s=1, max_retries=0)
    assert FallbackPerceiver(dead)(PROMPT, "")[0].by == FALLBACK


def test_from_env() -> None:
    assert clam_llm_from_env({}) is None
    c = clam_llm_from_env({"HIVEMEM_LLM_URL": "http://127.0.0.1:9/v1", "HIVEMEM_LLM_API_KEY": "sekret"})
    assert c is not None and c.model_id == "llm:smollm2" and "sekret" not in repr(c)


def test_processor_writes_the_back_end_into_its_events(server: Server) -> None:
    """The LLM's deductions and critiques go to the log with ``by``: a replay folds them, never asks again."""
    c = llm(server)
    driver = ClamDriver(TopicNames(), perceive=FallbackPerceiver(c), critic=FallbackCritic(c))
    client = offline_client("acme", "c1")

    def perceive(prompt: str, at: int) -> list[tuple[str, dict[str, Any]]]:
        env = client.build("clam", {"opId": f"o{at}", "op": "PERCEIVE", "prompt": prompt, "response": ""})
        return [
            (e.kind, json.loads(e.data)) for e in (decode_clam(o.value) for o in driver.pipe(encode_envelope(env), at))
        ]

    server.reply({"deductions": [FACT, SEMANTIC]})
    first = dict(perceive(PROMPT, T0))
    assert first["FACT_STORED"]["by"] == "llm:smollm2" and first["NODE_CREATED"]["by"] == "llm:smollm2"

    server.reply({"withstands": True, "debate": "Claim: the firmware is flaky\nVerdict: withstands."},
                 {"deductions": []})  # fmt: skip
    second = perceive("The ESP32 firmware is flaky again.", T0 + 1)
    assert [k for k, _ in second] == ["CRITIQUED"] and second[0][1]["by"] == "llm:smollm2"
    assert second[0][1]["withstands"] is True and second[0][1]["confidence_score"] == 2
    assert len(server.bodies) == 3  # perceive; then critique and perceive
