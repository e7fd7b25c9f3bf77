"""An LLM server down or busy is an outage, not a bad answer (inference.llm_chat): the KMMS consolidator
waits it out at its stored offset (``Outage``) instead of recording the episode's consolidation as failed;
CLAM, which has a local back-end, falls back to it as before. A real answer, or a 4xx, is still an error."""

from __future__ import annotations

import pytest

from contracts.kmms_records import KmmsEnrichment, KmmsEpisode, KmmsEvent, encode_kmms
from contracts.topics import TopicNames
from deploy.kafka_local import free_port
from governance.clam.triples import Triple
from governance.kmms.values import EpisodeText, Summary
from inference.clam.llm import ClamLlm, render_with_fallback
from inference.kmms.consolidator import ConsolidationError, ConsolidatorUnavailable
from inference.kmms.llm import SEED_EXAMPLE, LlmConsolidator
from inference.llm_chat import LlmUnavailable
from processors.kmms.consolidator import KmmsConsolidatorProcessor
from streams.processor import Outage
from streams.records import LogRecord
from tests.chat_server import Server

EPISODES = [
    EpisodeText("e1", "s1", 1_772_582_400_000, "user: I always use Python for data pipelines. I live in Porto.")
]
DOWN = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens: connection refused


def extract(c: LlmConsolidator) -> object:
    return c.extract_facts("user", Summary("", ()), EPISODES, {})


@pytest.mark.parametrize("status", [502, 503, 504, 408, 429])
def test_busy_on_every_attempt_is_unavailable(server: Server, status: int) -> None:
    server.reply("try later", status=status)
    with pytest.raises(ConsolidatorUnavailable):
        extract(LlmConsolidator(server.url, "m", timeout_s=5))
    assert len(server.bodies) == 3


def test_refused_connections_are_unavailable() -> None:
    with pytest.raises(ConsolidatorUnavailable, match="down or busy"):
        extract(LlmConsolidator(DOWN, "m", timeout_s=2, max_retries=1))


def test_a_real_answer_among_the_attempts_makes_it_an_error_of_the_answer(server: Server) -> None:
    server.reply("try later", "not json", status=503)
    server.replies[1] = (200, "not json")
    with pytest.raises(ConsolidationError) as err:
        extract(LlmConsolidator(server.url, "m", timeout_s=5))
    assert not isinstance(err.value, ConsolidatorUnavailable)


def test_busy_then_a_valid_answer_is_taken(server: Server) -> None:
    server.reply("try later", status=503)
    server.replies.append((200, SEED_EXAMPLE))
    assert len(extract(LlmConsolidator(server.url, "m", timeout_s=5))) == 1  # type: ignore[arg-type]


@pytest.mark.parametrize("status", [404, 500])  # a wrong model; an answer that failed on this request
def test_a_4xx_or_500_is_an_error_not_an_outage(server: Server, status: int) -> None:
    server.reply("no such model", status=status)
    with pytest.raises(ConsolidationError) as err:
        extract(LlmConsolidator(server.url, "m", timeout_s=5))
    assert not isinstance(err.value, ConsolidatorUnavailable)


def _records(names: TopicNames) -> list[LogRecord]:
    base = {"tenant": "acme", "claw_id": "c1", "scope": "u1", "at": 1_772_582_400_000, "trace_id": "t"}
    stored = KmmsEvent(event_id="ev-1", kind="EPISODE_STORED", source="s:0:0", **base,  # type: ignore[arg-type]
                       episode=KmmsEpisode(episode_id="e1", session_id="s1", thread_id="", content_type="NOTE",
                                           occurred_at=1_772_582_400_000, content="user: I live in Porto.",
                                           content_hash="h"))  # fmt: skip
    enriched = KmmsEvent(event_id="ev-2", kind="EPISODE_ENRICHED", source="s:0:1", **base,  # type: ignore[arg-type]
                         enrichment=KmmsEnrichment(episode_id="e1", primary_entity="user", primary_topic="residence",
                                                   model="fast"))  # fmt: skip
    return [
        LogRecord(names.kmms_events, 0, i, 0, b"acme/c1/u1", encode_kmms(ev)) for i, ev in enumerate([stored, enriched])
    ]


def test_the_consolidator_processor_waits_out_an_llm_outage() -> None:
    names = TopicNames("hivemem.")
    proc = KmmsConsolidatorProcessor(names, LlmConsolidator(DOWN, "m", timeout_s=2, max_retries=0), batch=1)
    with pytest.raises(Outage, match="kmms-consolidator"):
        proc.process(_records(names), 0)


def test_clam_falls_back_to_its_local_back_end_as_before() -> None:
    llm = ClamLlm(DOWN, "m", timeout_s=2, max_retries=0)
    text, renderer = render_with_fallback(llm, [Triple("user", "lives_in", "Porto")], "en")
    assert renderer == "local:fallback" and "Porto" in text
    assert issubclass(LlmUnavailable, type(llm).ERROR)
