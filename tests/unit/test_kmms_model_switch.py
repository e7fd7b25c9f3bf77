"""The model-switch rule's decision (projections.kmms.model_switch.ServingModel) with its two checks given as
plain functions, and the previous model's settings (inference.embeddings.previous_embedder_from_env)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from inference.embedding_base import CONFIG, EmbeddingError
from inference.embeddings import MiniLmEmbedder, OpenAIEmbedder, previous_embedder_from_env
from projections.kmms.model_switch import ServingModel
from projections.kmms.search import Memory


@dataclass
class Model:
    model_id: str


OLD, NEW = Model("old"), Model("new")
M1, M2 = Memory("acme", "c1", ""), Memory("acme", "c1", "u2")


class Checks:
    def __init__(self) -> None:
        self.caught_up = False
        self.covered: set[Memory] = set()
        self.calls: list[str] = []

    async def is_caught_up(self, m: Memory) -> bool:
        self.calls.append("caught_up")
        return self.caught_up

    async def is_covered(self, m: Memory) -> bool:
        self.calls.append(f"covered:{m.scope}")
        return m in self.covered


def serve(s: ServingModel, m: Memory) -> str:
    return str(asyncio.run(s.embedder(m)).model_id)


def test_the_old_model_serves_until_the_new_one_caught_up_and_covers_the_memory() -> None:
    c = Checks()
    s = ServingModel(NEW, OLD, c.is_caught_up, c.is_covered)
    assert serve(s, M1) == "old"  # the new embedder is behind on the log
    c.covered.add(M1)
    assert serve(s, M1) == "old"  # covered, but not caught up: an empty memory is no proof
    c.caught_up = True
    c.covered.clear()
    assert serve(s, M1) == "old"  # caught up, but the read model has not folded its vectors for M1
    c.covered.add(M1)
    assert serve(s, M1) == "new"
    assert serve(s, M2) == "old"  # memories switch one by one
    c.covered.add(M2)
    assert serve(s, M2) == "new"
    c.caught_up, c.covered = False, set()
    calls = len(c.calls)
    assert serve(s, M1) == "new" and serve(s, M2) == "new"  # for good: no check again, no flapping back
    assert len(c.calls) == calls


def test_without_a_previous_model_the_current_one_serves_unchecked() -> None:
    c = Checks()
    assert serve(ServingModel(NEW, None, c.is_caught_up, c.is_covered), M1) == "new" and c.calls == []
    assert asyncio.run(ServingModel(None, None, c.is_caught_up, c.is_covered).embedder(M1)) is None


def test_previous_model_settings() -> None:
    assert previous_embedder_from_env({}) is None
    assert isinstance(previous_embedder_from_env({"HIVEMEM_EMBEDDINGS_PREVIOUS": "local"}), MiniLmEmbedder)
    remote = previous_embedder_from_env({"HIVEMEM_EMBEDDINGS_PREVIOUS_URL": "http://127.0.0.1:9/v1",
                                         "HIVEMEM_EMBEDDINGS_PREVIOUS_MODEL": "old-model",
                                         "HIVEMEM_EMBEDDINGS_URL": "http://127.0.0.1:8/v1"})  # fmt: skip
    assert isinstance(remote, OpenAIEmbedder) and remote.model_id == "openai:old-model@127.0.0.1:9"
    for bad in ({"HIVEMEM_EMBEDDINGS_PREVIOUS": "minilm"},
                {"HIVEMEM_EMBEDDINGS_PREVIOUS": "local", "HIVEMEM_EMBEDDINGS_PREVIOUS_URL": "http://h/v1"},
                {"HIVEMEM_EMBEDDINGS_PREVIOUS_URL": "http://h/v1"}):  # fmt: skip
        with pytest.raises(EmbeddingError) as err:
            previous_embedder_from_env(bad)
        assert err.value.code == CONFIG
