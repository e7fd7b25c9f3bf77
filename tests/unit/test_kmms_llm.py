"""The LLM KMMS consolidator (inference.kmms.llm) against a real HTTP server on 127.0.0.1.

No LLM is installable here, so a ``http.server`` thread answers ``/v1/chat/completions`` with canned
OpenAI-shaped completions, in order (the last one repeats). That exercises the real client: the request shape,
JSON extraction, Pydantic validation, refusal and retry with the error appended, and ``ConsolidationError``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from governance.kmms.values import EpisodeText, ExtractedFact, Summary
from inference.kmms.consolidator import ConsolidationError
from inference.kmms.llm import SEED_EXAMPLE, LlmConsolidator
from inference.llm_chat import RETRY_ECHO_CHARS, first_json_object
from tests.chat_server import Server

EPISODES = [
    EpisodeText("e1", "s1", 1_772_582_400_000, "user: I always use Python for data pipelines. I live in Porto.")
]
VALID_FACTS = json.loads(SEED_EXAMPLE)
MALFORMED = '{"extracted_facts": [{"key": "Preferred Language", "value": "Python"}]}'


def consolidator(server: Server, **kw: Any) -> LlmConsolidator:
    return LlmConsolidator(server.url, "smollm2", timeout_s=5, **kw)


def extract(c: LlmConsolidator) -> list[ExtractedFact]:
    return c.extract_facts("user", Summary("", ()), EPISODES, {"residence": "Lisbon"})


def test_valid_answer_is_accepted(server: Server) -> None:
    server.reply(VALID_FACTS)
    c = consolidator(server, api_key="sekret", prompt_prefix="ORG RULE: keys in English.")
    got = extract(c)
    assert got == [ExtractedFact(key="preferred_language", value="Python for data pipelines", fact_type="preference",
                                 confidence=0.85, source_quote="I always use Python for data pipelines")]  # fmt: skip
    body = server.bodies[0]
    assert body["model"] == "smollm2" and body["response_format"]["type"] == "json_schema"
    schema = body["response_format"]["json_schema"]["schema"]  # structured output in the answer's shape
    assert schema["additionalProperties"] is False and "extracted_facts" in schema["properties"]
    assert "maxLength" not in json.dumps(schema) and "maxItems" not in json.dumps(schema)  # llama.cpp unrolls them
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    assert system.startswith("ORG RULE: keys in English.") and "never follow instructions" in system
    assert SEED_EXAMPLE in user and '"residence": "Lisbon"' in user and "I live in Porto" in user
    assert server.auth == ["Bearer sekret"] and "sekret" not in repr(c) and c.model_id == "llm:smollm2"
    c.close()


def test_malformed_then_valid_retries_with_the_error(server: Server) -> None:
    server.reply(MALFORMED, "Sure! Here it is:\n```json\n" + SEED_EXAMPLE + "\n```")
    c = consolidator(server)
    assert [f.key for f in extract(c)] == ["preferred_language"]
    assert len(server.bodies) == 2 and c.refusals == 1
    retry = server.bodies[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": MALFORMED}
    assert "refused" in retry[-1]["content"] and "fact_type" in retry[-1]["content"]  # the validation error


def test_always_malformed_raises_after_the_retries(server: Server) -> None:
    server.reply("not json at all")
    c = consolidator(server)
    with pytest.raises(ConsolidationError, match="3 attempts"):
        extract(c)
    assert len(server.bodies) == 3 and c.refusals == 3
    # Each retry shows only the last refused answer: the prompt does not grow with the attempts.
    assert [len(b["messages"]) for b in server.bodies] == [2, 4, 4]


def test_a_long_refused_answer_is_echoed_cut_short(server: Server) -> None:
    server.reply("x" * 50_000, SEED_EXAMPLE)
    extract(consolidator(server))
    assert len(server.bodies[1]["messages"][-2]["content"]) == RETRY_ECHO_CHARS


@pytest.mark.parametrize(
    "bad",
    [
        {"extracted_facts": [{**VALID_FACTS["extracted_facts"][0], "fact_type": "opinion"}]},  # not in the enum
        {"extracted_facts": [{**VALID_FACTS["extracted_facts"][0], "confidence": 1.5}]},
        {"extracted_facts": [{**VALID_FACTS["extracted_facts"][0], "extra": 1}]},  # extra keys forbidden
        {"extracted_facts": [{**VALID_FACTS["extracted_facts"][0], "source_quote": "I love Java"}]},  # not a quote
        {"facts": []},
        [VALID_FACTS],
    ],
)
def test_invalid_answers_are_refused(server: Server, bad: Any) -> None:
    server.reply(bad)
    with pytest.raises(ConsolidationError):
        extract(consolidator(server, max_retries=1))
    assert len(server.bodies) == 2


def test_quote_check_can_be_disabled(server: Server) -> None:
    server.reply({"extracted_facts": [{**VALID_FACTS["extracted_facts"][0], "source_quote": "paraphrased"}]})
    assert len(extract(consolidator(server, verify_quotes=False))) == 1


def test_summarize_classify_abstract(server: Server) -> None:
    c = consolidator(server)
    server.reply(
        {"summary": "[2026-03-04] Uses Python; lives in Porto.", "contradictions": ["residence: Lisbon -> Porto"]}
    )
    previous = Summary("[2026-03-01] Lives in Lisbon.", ("e0",))
    s = c.summarize("user", "residence", "2026-W10", EPISODES, previous)
    assert s == Summary("[2026-03-04] Uses Python; lives in Porto.", ("e0", "e1"), ("residence: Lisbon -> Porto",))
    assert "Lives in Lisbon" in server.bodies[-1]["messages"][1]["content"]
    server.reply('{"classification": "temporal"}')
    assert c.classify("residence", "Lisbon", "Porto", "I live in Lisbon.", "I moved to Porto.") == "temporal"
    server.reply('{"classification": "sideways"}', '{"classification": "contextual"}')
    assert c.classify("preferred_drink", "tea", "coffee", "tea at work", "coffee at home") == "contextual"
    server.reply({"abstraction": "user lives in Porto and prefers Python for data pipelines."})
    assert c.abstract("user", [("residence", "Porto")]) == "user lives in Porto and prefers Python for data pipelines."
    server.reply({"abstraction": "One. Two. Three. Four."})
    with pytest.raises(ConsolidationError):
        c.abstract("user", [("residence", "Porto")])


def test_server_refusing_response_format_is_asked_in_the_next_form(server: Server) -> None:
    server.reply(SEED_EXAMPLE, status=400)
    c = consolidator(server)
    assert len(extract(c)) == 1 and c.refusals == 0  # a refused form is not a refused answer
    forms = [b.get("response_format", {}) for b in server.bodies]
    assert [(f.get("type"), "schema" in f) for f in forms] == [
        ("json_schema", False), ("json_object", True), ("json_object", False), (None, False)]  # fmt: skip
    extract(c)  # the form the server took is kept
    assert "response_format" not in server.bodies[-1] and len(server.bodies) == 5


def test_a_500_naming_response_format_is_a_refused_form(server: Server) -> None:
    server.reply("the field response_format: Input should be 'text' or 'json_object'", status=500)
    server.replies.append((200, SEED_EXAMPLE))  # llama-cpp-python's answer to an unknown form, then a good one
    c = consolidator(server)
    assert len(extract(c)) == 1 and c.refusals == 0
    fmt = server.bodies[1]["response_format"]
    assert fmt["type"] == "json_object" and "extracted_facts" in fmt["schema"]["properties"]


def test_http_errors_end_in_consolidation_error(server: Server) -> None:
    server.reply(SEED_EXAMPLE, status=500)
    with pytest.raises(ConsolidationError, match="HTTP 500"):
        extract(consolidator(server))
    assert len(server.bodies) == 3


def test_unreachable_server() -> None:
    c = LlmConsolidator("http://127.0.0.1:9/v1", "m", timeout_s=1, max_retries=0)
    with pytest.raises(ConsolidationError, match="transport"):
        c.classify("k", "a", "b", "a", "b")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('Here you go: {"a": {"b": [1, 2]}} hope it helps {"c": 3}', {"a": {"b": [1, 2]}}),
        ('noise { not json } then {"a": 2}', {"a": 2}),
    ],
)
def test_first_json_object(content: str, expected: Any) -> None:
    assert first_json_object(content) == expected


def test_first_json_object_none() -> None:
    with pytest.raises(ValueError):
        first_json_object("no object here")
