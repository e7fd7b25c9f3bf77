"""Changing the embedding model (seed 004's switch rule) through the real pipeline: the old vectors serve
until the new model has re-embedded the memory from the log, a query never mixes the two, and then the new
model serves for good.

The session stack embeds with the bundled MiniLM (model A). Model B is an OpenAI-compatible embeddings
server run here (the same MiniLM weights behind ``/v1/embeddings``, so a real model under another
``model_id``); its answers can be held back (503) to keep B incomplete. A second API process is configured as
a deployment in the middle of a switch: ``HIVEMEM_EMBEDDINGS_URL`` = B, ``HIVEMEM_EMBEDDINGS_PREVIOUS=local`` = A.
B's embedder runs on the stream runtime in this process (real Kafka, real Postgres), re-embedding from the
start of the log, while the session's kmms service keeps embedding with A.

The second test starts the switch while the new server answers nothing but 503: the api, kmms and caml
services started with the new model must come up, serve searches with the old one, and complete the switch
once the server answers.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.responses import JSONResponse

from contracts.consumers import embedder_name, kmms_embedder_name
from deploy.kafka_local import free_port
from hivemem.stack import ServiceProcess, Stack
from inference.minilm import MiniLmEmbedder
from inference.openai_embeddings import OpenAIEmbedder
from processors.kmms.embedder import KmmsEmbedderProcessor
from producers.memory_client import MemoryClient
from projections.auth import mint_token
from streams.runtime import StreamRuntime
from tests.conftest import wait_until
from tests.integration.kmms_support import chat
from tests.integration.support import owner_db

pytestmark = pytest.mark.integration
TENANT = "acme"


@dataclass
class ModelB:
    url: str
    open: threading.Event = field(default_factory=threading.Event)
    requests: int = 0


@pytest.fixture(scope="module")
def model_b() -> Iterator[ModelB]:
    local = MiniLmEmbedder()
    port = free_port()
    b = ModelB(url=f"http://127.0.0.1:{port}/v1")
    b.open.set()
    app = FastAPI()

    @app.post("/v1/embeddings")
    def embeddings(body: dict[str, Any]) -> JSONResponse:  # sync: uvicorn's thread pool
        b.requests += 1
        if not b.open.is_set():
            return JSONResponse({"error": {"message": "held back by the test"}}, status_code=503)
        rows = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(local.embed(body["input"]))]
        return JSONResponse({"object": "list", "data": rows, "model": body["model"]})

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    assert wait_until(lambda: server.started, timeout=20, what="the model B server")
    yield b
    server.should_exit = True
    thread.join(10)


def _vectors(stack: Stack, claw: str, model: str) -> int:
    with owner_db(stack) as conn:
        row = conn.execute("SELECT count(*) FROM kmms.kmms_vectors WHERE tenant = %s AND claw_id = %s AND model = %s",
                           (TENANT, claw, model)).fetchone()  # fmt: skip
    return int(str(row[0])) if row else 0


def test_old_vectors_serve_until_the_new_model_is_complete(stack: Stack, model_b: ModelB) -> None:
    a_id = MiniLmEmbedder().model_id
    b = OpenAIEmbedder(model_b.url, "minilm-b", timeout=5)
    assert b.model_id != a_id
    env = {**stack.child_env(), "HIVEMEM_API_PORT": str(free_port()), "HIVEMEM_EMBEDDINGS_URL": model_b.url,
           "HIVEMEM_EMBEDDINGS_MODEL": "minilm-b", "HIVEMEM_EMBEDDINGS_PREVIOUS": "local"}  # fmt: skip
    api = ServiceProcess("api-switch", ["api"], env, stack.settings.home / "logs")
    api.start()
    url = f"http://127.0.0.1:{env['HIVEMEM_API_PORT']}"
    stop = threading.Event()
    runner: threading.Thread | None = None
    try:
        wait_until(lambda: _healthy(url), timeout=90, what="the switching API")  # it warms both models
        model_b.open.clear()  # B answers 503 from now on: its embedder waits, B stays incomplete
        runtime = StreamRuntime(KmmsEmbedderProcessor(stack.settings.topics, b), stack.settings.require_kafka(),
                                stack.settings.require_database())  # fmt: skip
        runner = threading.Thread(target=runtime.run, args=(stop,), daemon=True)
        runner.start()

        claw = f"switch-{uuid.uuid4().hex[:6]}"
        token = mint_token(stack.settings.load_config().token_secret, TENANT, "test", claw)
        mem = MemoryClient(url, token, timeout_s=60)
        said = ["I adopted a grey cat called Miso from the shelter.",
                "We migrated the billing jobs from Postgres to DuckDB this sprint.",
                "My sister Anna runs a bakery in Porto."]  # fmt: skip
        ids = [mem.add(chat(text)).episode_id for text in said]
        mem.wait_indexed(ids, timeout_s=60)  # searchable: embedded by the serving model, A

        # B is incomplete (it has nothing of this memory): A serves, alone.
        before = mem.search("what is the name of my cat?", k=3)
        assert before.embedding_model == a_id
        assert any("Miso" in h.text for h in before.hits)
        assert _vectors(stack, claw, b.model_id) == 0 and _vectors(stack, claw, a_id) > 0
        assert model_b.requests > 1, "B's embedder is trying (and held back)"

        # B is let through: it re-embeds from the log, and once it covers the memory it serves.
        model_b.open.set()
        after = wait_until(lambda: (r := mem.search("what is the name of my cat?", k=3)).embedding_model == b.model_id
                           and r, timeout=180, interval=1, what="model B serving the memory")  # fmt: skip
        assert any("Miso" in h.text for h in after.hits)
        assert _vectors(stack, claw, b.model_id) >= _vectors(stack, claw, a_id)

        # What arrives after the switch is searchable with B (A keeps embedding it too, unread).
        late = mem.add(chat("I started learning the cello in September.")).episode_id
        mem.wait_indexed([late], timeout_s=60)
        cello = mem.search("which instrument am I learning?", k=3)
        assert cello.embedding_model == b.model_id and any("cello" in h.text for h in cello.hits)
        # Text search never depended on vectors: it answers without a model.
        assert mem.search("DuckDB billing", mode="text").embedding_model is None
        mem.close()
    finally:
        stop.set()
        if runner is not None:
            runner.join(30)
        api.stop()


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        time.sleep(0.3)
        return False


def test_a_switch_started_while_the_new_server_is_down_serves_the_old_model_then_completes(
    stack: Stack, model_b: ModelB
) -> None:
    a_id = MiniLmEmbedder().model_id
    c = OpenAIEmbedder(model_b.url, "minilm-c", timeout=5)  # a model id of its own: its embedders start at 0
    port = free_port()
    env = {**stack.child_env(), "HIVEMEM_API_PORT": str(port), "HIVEMEM_EMBEDDINGS_URL": model_b.url,
           "HIVEMEM_EMBEDDINGS_MODEL": "minilm-c", "HIVEMEM_EMBEDDINGS_PREVIOUS": "local"}  # fmt: skip
    # The services of a deployment restarted for the switch. Beside the session's own, the processors both
    # run wait as standbys; the new model's embedders (kmms and caml) are theirs alone.
    services = [ServiceProcess(f"{name}-new-model-down", [name], env, stack.settings.home / "logs")
                for name in ("kmms", "caml", "api")]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    model_b.open.clear()  # the new server answers 503, from before the services start
    try:
        for svc in services:
            svc.start()
        wait_until(lambda: _healthy(url) or not all(s.alive() for s in services), timeout=120,
                   what="the API with its new model down")  # fmt: skip
        assert all(s.alive() for s in services), "a service died at start-up with its new model down"
        with httpx.Client(base_url=url, timeout=30) as h:
            # Ready: the new model's embedders are alive, waiting out the outage at their stored offsets.
            ready = wait_until(lambda: (r := h.get("/readyz")).status_code == 200 and r.json(), timeout=120,
                               what="ready while the new model is down")  # fmt: skip
        procs = ready["checks"]["processors"]
        assert procs[kmms_embedder_name(c.model_id)]["ok"] and procs[embedder_name(c.model_id)]["ok"]

        claw = f"down-{uuid.uuid4().hex[:6]}"
        token = mint_token(stack.settings.load_config().token_secret, TENANT, "test", claw)
        mem = MemoryClient(url, token, timeout_s=60)
        ids = [mem.add(chat(text)).episode_id for text in ("I adopted a grey cat called Miso from the shelter.",
                                                            "My sister Anna runs a bakery in Porto.")]  # fmt: skip
        mem.wait_indexed(ids, timeout_s=60)
        tried = model_b.requests
        before = mem.search("what is the name of my cat?", k=3)
        assert before.embedding_model == a_id and any("Miso" in h.text for h in before.hits)
        assert _vectors(stack, claw, c.model_id) == 0
        wait_until(lambda: model_b.requests > tried, timeout=30, what="the new model's embedders trying again")

        model_b.open.set()  # the server answers: the new embedders resume from their stored offsets
        after = wait_until(lambda: (r := mem.search("what is the name of my cat?", k=3)).embedding_model == c.model_id
                           and r, timeout=240, interval=1, what="the new model serving the memory")  # fmt: skip
        assert any("Miso" in h.text for h in after.hits)
        assert _vectors(stack, claw, c.model_id) >= _vectors(stack, claw, a_id) > 0
        mem.close()
        # The model serving the memory goes down again: a hybrid search rides it out on full text and says
        # so; a vector-only search has nothing to serve and says why.
        model_b.open.clear()
        with httpx.Client(base_url=url, timeout=60, headers={"Authorization": f"Bearer {token}"}) as h:
            ask = {"query": "the cat I adopted from the shelter", "k": 3}  # not embedded before: no cached vector
            hybrid = h.post("/api/v1/memory/search", json=ask)
            assert hybrid.status_code == 200, hybrid.text
            assert hybrid.json()["degraded"].startswith("EMBEDDINGS_UNAVAILABLE")
            assert hybrid.json()["embeddingModel"] is None and any("Miso" in x["text"] for x in hybrid.json()["hits"])
            vector = h.post("/api/v1/memory/search", json={**ask, "mode": "vector"})
            assert (vector.status_code, vector.json()["code"]) == (503, "EMBEDDINGS_UNAVAILABLE")
        model_b.open.set()
        assert all(s.alive() for s in services), "a service died during the outage"
    finally:
        model_b.open.set()
        for svc in services:
            svc.stop()
