"""The bench baseline's vector cache (``bench.vector_cache``): a second run of the same corpus and model reads every
unit vector instead of embedding it and ranks exactly as the first; another model's vectors are never read."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.memory_baseline import run
from bench.vector_cache import VectorCache, default_path
from tests.unit.test_memory_baseline import BagOfWords, corpus, question


def _corpus():  # type: ignore[no-untyped-def]
    return corpus(question("where is the pottery studio?", ["s1"]), question("the greyhound?", ["s3"]))


def test_a_second_run_reads_every_vector_and_ranks_the_same(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "vectors.sqlite"  # its folder does not exist yet
    first_embedder, second_embedder = BagOfWords(), BagOfWords()
    cache = VectorCache(path, "bag-of-words/1")
    first = run(_corpus(), first_embedder, batch=3, cache=cache)
    cache.close()
    assert first.cached == 0 and len(first_embedder.embedded) == first.distinct_texts > 0

    cache = VectorCache(path, "bag-of-words/1")
    second = run(_corpus(), second_embedder, batch=3, cache=cache)
    cache.close()
    assert second.cached == second.distinct_texts == first.distinct_texts
    assert second_embedder.embedded == []  # nothing embedded again
    assert [r.hits for r in second.results["fused"]] == [r.hits for r in first.results["fused"]]
    assert [r.hits for r in second.results["vector"]] == [r.hits for r in first.results["vector"]]


def test_another_model_reads_nothing_and_only_missing_texts_are_embedded(tmp_path: Path) -> None:
    path = tmp_path / "vectors.sqlite"
    text = "pottery studio by the river\nok"  # one of the corpus' rounds
    cache = VectorCache(path, "model-a")
    cache.put({text: np.asarray(BagOfWords().embed([text])[0], dtype=np.float64)})
    cache.close()
    cache = VectorCache(path, "model-b")
    embedder = BagOfWords()
    out = run(_corpus(), embedder, cache=cache)
    assert out.cached == 0 and "pottery studio by the river\nok" in embedder.embedded
    cache.close()

    cache = VectorCache(path, "model-a")  # model-a holds one text of the corpus: the rest are embedded
    embedder = BagOfWords()
    out = run(_corpus(), embedder, cache=cache)
    cache.close()
    assert out.cached == 1 and "pottery studio by the river\nok" not in embedder.embedded
    assert len(embedder.embedded) == out.distinct_texts - 1


def test_many_texts_round_trip_exactly(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    texts = [f"text {i} é \U0001f600" for i in range(1_203)]  # over SQLite's bound-parameter batch of 500
    vectors = {t: rng.standard_normal(384) for t in texts}
    cache = VectorCache(tmp_path / "v.sqlite", "m")
    cache.put(vectors)
    got = cache.get([*texts, "never embedded"])
    cache.close()
    assert set(got) == set(texts)
    assert all(np.array_equal(got[t], vectors[t]) for t in texts)  # float64 bytes, not a rounding of them


def test_default_path_follows_xdg_cache_home(tmp_path: Path) -> None:
    assert default_path({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "hivemem" / "baseline-vectors.sqlite"
    assert default_path({}).parts[-3:] == (".cache", "hivemem", "baseline-vectors.sqlite")
