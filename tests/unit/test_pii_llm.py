"""PII stage 3 client (inference.pii_llm) against a real OpenAI-compatible HTTP server on 127.0.0.1.

No LLM is installable here, so the server answers chat completions from a script keyed on markers in the
observation: valid JSON, fenced JSON, malformed once, malformed always, schema-invalid, slow, HTTP 500. That
exercises the real client: request shape, auth, parsing, Pydantic validation, retry once, timeout, fallback.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from governance.pii import LLM, LOCAL_RULE, NER, REGEX, ImplicitVerdict, PiiPolicy, scan
from inference.pii_llm import (
    LlmImplicitClassifier,
    LlmSettings,
    chat_endpoint,
    classifier_from_env,
    parse_answer,
)

PII = {"contains_pii": True, "category": "indirect_reference", "confidence": 0.91}
CLEAN = {"contains_pii": False, "category": "none", "confidence": 0.8}


@dataclass
class Script:
    """What the fake server saw, and how it behaves."""

    reject_json_schema: bool = False
    calls: Counter[str] = field(default_factory=Counter)
    formats: list[str] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)


def completion(content: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": content}
    return {"id": "x", "object": "chat.completion", "model": "fake",
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}]}  # fmt: skip


def make_app(script: Script) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        script.bodies.append(body)
        script.auth.append(request.headers.get("authorization"))
        fmt = body.get("response_format", {}).get("type", "")
        script.formats.append(fmt)
        observation = json.loads(body["messages"][-1]["content"].removeprefix("Observation: "))
        marker = next((m for m in ("MALFORMED-ONCE", "MALFORMED-ALWAYS", "INCONSISTENT", "FENCED", "SLOW",
                                   "HTTP500", "NOCHOICES") if m in observation), "plain")  # fmt: skip
        script.calls[marker] += 1
        if script.reject_json_schema and fmt == "json_schema":
            return JSONResponse({"error": {"message": "response_format json_schema unsupported"}}, status_code=400)
        if marker == "MALFORMED-ONCE" and script.calls[marker] == 1:
            return JSONResponse(completion('{"contains_pii": tru'))
        if marker == "MALFORMED-ALWAYS":
            return JSONResponse(completion("I think this text is probably fine."))
        if marker == "INCONSISTENT":
            return JSONResponse(completion(json.dumps({"contains_pii": False, "category": "health_individual",
                                                       "confidence": 0.5})))  # fmt: skip
        if marker == "SLOW":
            time.sleep(1.5)
        if marker == "HTTP500":
            return JSONResponse({"error": "boom"}, status_code=500)
        if marker == "NOCHOICES":
            return JSONResponse({"choices": []})
        answer = PII if "Mumbai who" in observation else CLEAN
        content = json.dumps(answer)
        if marker == "FENCED":
            content = f"```json\n{content}\n```"
        return JSONResponse(completion(content))

    return app


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    script = Script()
    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(make_app(script), host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not srv.started:
        assert time.monotonic() < deadline, "fake LLM server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/v1", script
    finally:
        srv.should_exit = True
        thread.join(timeout=10)


def classifier(url: str, timeout: float = 5.0, key: str | None = "sk-test") -> LlmImplicitClassifier:
    return LlmImplicitClassifier(LlmSettings(url, "pii-judge", key, timeout))


def test_decides_pii_and_clean_with_one_call_each(server: tuple[str, Script]) -> None:
    url, script = server
    c = classifier(url)
    assert c.classify("The user in Mumbai who reported the outage.") == ImplicitVerdict(True, "indirect_reference",
                                                                                          0.91)  # fmt: skip
    assert c.classify("40% of customers prefer UPI.") == ImplicitVerdict(False, None, 0.8)
    assert script.calls["plain"] == 2 and c.failures == 0
    body = script.bodies[0]
    assert body["model"] == "pii-judge" and body["temperature"] == 0
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["contains_pii", "category", "confidence"]
    assert body["messages"][0]["role"] == "system"
    assert script.auth == ["Bearer sk-test"] * 2
    c.close()


def test_fenced_json_is_accepted(server: tuple[str, Script]) -> None:
    url, _ = server
    assert classifier(url).classify("FENCED aggregate report") == ImplicitVerdict(False, None, 0.8)


def test_malformed_answer_is_retried_once(server: tuple[str, Script]) -> None:
    url, script = server
    c = classifier(url)
    assert c.classify("MALFORMED-ONCE: the user in Mumbai who left") == ImplicitVerdict(True, "indirect_reference",
                                                                                         0.91)  # fmt: skip
    assert script.calls["MALFORMED-ONCE"] == 2 and c.failures == 1


@pytest.mark.parametrize("marker", ["MALFORMED-ALWAYS", "INCONSISTENT", "HTTP500", "NOCHOICES"])
def test_twice_unusable_is_undecided(server: tuple[str, Script], marker: str) -> None:
    url, script = server
    c = classifier(url)
    assert c.classify(f"{marker} the user in Mumbai who left") is None
    assert script.calls[marker] == 2 and c.failures == 2


def test_timeout_is_undecided(server: tuple[str, Script]) -> None:
    url, script = server
    t0 = time.monotonic()
    assert classifier(url, timeout=0.3).classify("SLOW text") is None
    assert time.monotonic() - t0 < 1.4  # two attempts of 0.3 s, not two waits of 1.5 s
    assert script.calls["SLOW"] >= 1


def test_unreachable_server_is_undecided() -> None:
    assert classifier(f"http://127.0.0.1:{free_port()}/v1", timeout=0.5).classify("anything") is None


def test_server_without_json_schema_gets_json_object_on_the_retry(server: tuple[str, Script]) -> None:
    url, script = server
    script.reject_json_schema = True
    c = classifier(url)
    assert c.classify("The user in Mumbai who left") == ImplicitVerdict(True, "indirect_reference", 0.91)
    assert c.classify("40% of customers") == ImplicitVerdict(False, None, 0.8)
    assert script.formats == ["json_schema", "json_object", "json_object"]


def test_cascade_uses_the_llm_and_falls_back_to_the_local_rule(server: tuple[str, Script]) -> None:
    url, _ = server
    c = classifier(url)
    text = "The user in Mumbai who reported the outage is 34 years old."
    v = scan(text, PiiPolicy(), None, c)
    assert (v.clean, v.stage_hit, v.category) == (False, LLM, "indirect_reference")
    # The LLM says clean for this one; the cascade takes its word.
    v2 = scan("Staff in Mumbai and Pune share one dialysis vendor.", PiiPolicy(escalation="always"), None, c)
    assert v2.clean and v2.stages_run == (REGEX, LLM)
    # Malformed twice: the local rule decides, and says so.
    v3 = scan("MALFORMED-ALWAYS: the patient in Chennai who missed dialysis.", PiiPolicy(), None, c)
    assert v3.stages_run == (REGEX, LLM, LOCAL_RULE) and v3.stage_hit == LOCAL_RULE and not v3.clean
    assert "llm-undecided" in v3.escalation
    assert NER not in v3.stages_run


def test_settings_from_env_and_endpoint() -> None:
    assert LlmSettings.from_env({}) is None
    assert classifier_from_env({}) is None
    s = LlmSettings.from_env({"HIVEMEM_LLM_URL": "http://h:8000/v1", "HIVEMEM_LLM_API_KEY": "k",
                              "HIVEMEM_LLM_TIMEOUT": "2.5"})  # fmt: skip
    assert s == LlmSettings("http://h:8000/v1", "default", "k", 2.5)
    assert "k" not in repr(s)
    assert chat_endpoint("http://h:8000") == "http://h:8000/v1/chat/completions"
    assert chat_endpoint("http://h:8000/v1/") == "http://h:8000/v1/chat/completions"
    assert chat_endpoint("https://p/api/chat/completions?x=1") == "https://p/api/chat/completions"
    with pytest.raises(ValueError):
        chat_endpoint("ftp://h/v1")


@pytest.mark.parametrize(
    "content",
    [
        '{"contains_pii": true, "category": "none", "confidence": 0.5}',  # inconsistent
        '{"contains_pii": false, "category": "none", "confidence": 1.5}',  # out of range
        '{"contains_pii": "no", "category": "none", "confidence": 0.5}',  # not a boolean
        '{"contains_pii": false, "category": "none", "confidence": 0.5, "name": "x"}',  # extra field
        '{"contains_pii": true, "category": "celebrity", "confidence": 0.5}',  # unknown category
        "[]",
    ],
)
def test_parse_answer_rejects_invalid_answers(content: str) -> None:
    with pytest.raises(ValueError):
        parse_answer(content)
