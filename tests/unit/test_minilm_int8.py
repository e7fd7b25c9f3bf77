"""The int8-arithmetic build of MiniLM (inference/minilm_int8.py): built from the wheel's real model, cached,
checked against its pinned sha256 on every load, rebuilt when the cache holds anything else."""

from __future__ import annotations

from pathlib import Path

from inference.embeddings import embedder_from_env, previous_embedder_from_env
from inference.minilm import MiniLmEmbedder
from inference.minilm_int8 import BUILT_SHA256, CACHE_ENV, RECIPE, cache_dir

TEXTS = ["Caroline: I went to the LGBTQ support group yesterday.", "what did Melanie paint?"]


def test_built_once_then_read_from_the_cache_and_rebuilt_when_it_is_damaged(tmp_path: Path) -> None:
    made = embedder_from_env({CACHE_ENV: str(tmp_path)})
    assert isinstance(made, MiniLmEmbedder) and made.model_cache == tmp_path
    first = made.embed(TEXTS)
    cached = tmp_path / f"{RECIPE}-{BUILT_SHA256[:16]}.onnx"
    assert [p.name for p in tmp_path.iterdir()] == [cached.name]  # no temporary file left behind
    stamp = cached.stat().st_mtime_ns
    again = MiniLmEmbedder(model_cache=tmp_path)
    assert again.embed(TEXTS) == first and cached.stat().st_mtime_ns == stamp  # read, not rebuilt

    cached.write_bytes(b"not a model")  # a damaged or foreign file under the cache's name is never loaded
    assert MiniLmEmbedder(model_cache=tmp_path).embed(TEXTS) == first
    assert cached.stat().st_size > 10_000_000


def test_an_unwritable_cache_still_serves(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache directory would be")
    fp32 = MiniLmEmbedder(arithmetic="fp32").embed(TEXTS)
    got = MiniLmEmbedder(model_cache=blocked / "cache").embed(TEXTS)
    assert len(got) == 2 and got != fp32
    assert not (blocked / "cache").exists()


def test_cache_dir_defaults(tmp_path: Path) -> None:
    assert cache_dir({"XDG_CACHE_HOME": str(tmp_path), "HOME": "/h"}) == tmp_path / "hivemem"
    assert cache_dir({"HOME": "/h"}) == Path("/h/.cache/hivemem")
    assert cache_dir({}) == Path.home() / ".cache" / "hivemem"
    previous = previous_embedder_from_env({"HIVEMEM_EMBEDDINGS_PREVIOUS": "local", CACHE_ENV: str(tmp_path)})
    assert isinstance(previous, MiniLmEmbedder) and previous.model_cache == tmp_path
