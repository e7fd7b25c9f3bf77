"""Start-up with an optional server down: the embedder's warm-up (hivemem.caml_wiring.warm) waits out an
outage instead of stopping the service, and the LLM clients contact nothing until first use."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest

from deploy.kafka_local import free_port
from hivemem.caml_wiring import warm
from inference.clam.llm import clam_llm_from_env
from inference.embedding_base import (
    CONFIG,
    DIMENSION_MISMATCH,
    MODEL_UNAVAILABLE,
    UPSTREAM_ERROR,
    UPSTREAM_TIMEOUT,
    UPSTREAM_UNAVAILABLE,
    EmbedderHealth,
    EmbeddingError,
)
from inference.kmms.backends import consolidator_from_env
from inference.openai_embeddings import OpenAIEmbedder
from inference.pii_llm import classifier_from_env


class Failing:
    model_id, dim = "stub:failing", 384

    def __init__(self, code: str) -> None:
        self.code, self.calls = code, 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        raise EmbeddingError(self.code, "as told")

    def embed_query(self, text: str) -> list[float]:
        return self.embed([text])[0]

    def health(self) -> EmbedderHealth:
        return EmbedderHealth(False, self.model_id, self.dim, "stub")


@pytest.mark.parametrize("code", [UPSTREAM_UNAVAILABLE, UPSTREAM_TIMEOUT])
def test_an_outage_at_warm_up_is_logged_and_the_service_starts(code: str, caplog: pytest.LogCaptureFixture) -> None:
    e = Failing(code)
    with caplog.at_level(logging.WARNING, logger="hivemem.caml"):
        assert warm(e) is e
    assert e.calls == 1 and "stub:failing did not answer the warm-up" in caplog.text


@pytest.mark.parametrize("code", [CONFIG, UPSTREAM_ERROR, DIMENSION_MISMATCH, MODEL_UNAVAILABLE])
def test_a_configuration_to_fix_still_stops_the_service(code: str) -> None:
    with pytest.raises(EmbeddingError) as err:
        warm(Failing(code))
    assert err.value.code == code


def test_a_real_server_that_refuses_connections_is_waited_out() -> None:
    e = OpenAIEmbedder(f"http://127.0.0.1:{free_port()}/v1", "down", timeout=2)
    assert warm(e) is e
    with pytest.raises(EmbeddingError) as err:  # the first use asks again, and says it is an outage
        e.embed_query("still down")
    assert err.value.code == UPSTREAM_UNAVAILABLE


def test_the_llm_clients_contact_nothing_before_first_use() -> None:
    env = {"HIVEMEM_LLM_URL": f"http://127.0.0.1:{free_port()}/v1", "HIVEMEM_LLM_MODEL": "down"}
    assert clam_llm_from_env(env) is not None
    assert classifier_from_env(env) is not None
    assert type(consolidator_from_env(env)).__name__ == "LlmConsolidator"
