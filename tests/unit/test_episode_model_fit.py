"""The episode model's fit (bench/episode_model.py): a logistic regression by Newton's method that finds the weights
it was given back, on the raw features, whatever their scales."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.episode_model import FEATURES, Asked, fit, recall


def test_the_fit_finds_the_weights_that_drew_the_labels() -> None:
    rng = np.random.default_rng(7)
    n = 60_000
    # Features on the scales the first stage gives them: fused scores ~0.1, ratios ~1, reciprocal ranks ~0.05, the
    # word-by-word reading's gap ~0.3.
    scales = np.array([0.1, 0.05, 1.0, 0.5, 0.2, 0.05, 0.05, 0.3, 0.05])
    x = rng.random((n, len(FEATURES))) * scales
    true = np.array([20.0, 15.0, 4.0, -2.0, 6.0, -20.0, -10.0, 7.0, 12.0])
    p = 1 / (1 + np.exp(-(x @ true - 3.0)))
    y = (rng.random(n) < p).astype(float)
    w = fit(x, y, c=1e6)  # next to no penalty: the maximum-likelihood weights
    got = np.array([getattr(w, f) for f in FEATURES])
    assert got == pytest.approx(true, abs=0.15 * np.abs(true).max())
    assert w.intercept == pytest.approx(-3.0, abs=0.3)
    assert np.sign(got).tolist() == np.sign(true).tolist()


def test_a_penalty_pulls_the_weights_toward_zero() -> None:
    rng = np.random.default_rng(3)
    x = rng.random((400, len(FEATURES)))
    y = (x[:, 0] + 0.3 * rng.standard_normal(400) > 0.5).astype(float)
    loose, tight = fit(x, y, c=100.0), fit(x, y, c=0.001)
    assert abs(tight.fused1) < abs(loose.fused1) and loose.fused1 > 0


def test_recall_counts_each_evidence_session_once() -> None:
    asked = [Asked(["s1", "s2"], ["s1", "s9", "s2"], []), Asked(["s3"], ["s4", "s5"], []), Asked([], ["s1"], [])]
    assert recall(asked, 2) == pytest.approx((0.5 + 0.0) / 2)
    assert recall(asked, 3) == pytest.approx((1.0 + 0.0) / 2)


def test_a_draw_of_a_corpus_other_than_longmemeval_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.episode_model import main

    assert main(["--dataset", "locomo", "--file", str(tmp_path / "locomo10.json"), "--sample", "5"]) == 2
    out = capsys.readouterr().out
    assert "BAD_ARGUMENT" in out and "--sample applies to --dataset longmemeval" in out


def test_a_missing_file_is_refused_with_its_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bench.episode_model import main

    assert main(["--dataset", "locomo", "--file", str(tmp_path / "locomo10.json")]) == 2
    out = capsys.readouterr().out
    assert "BAD_ARGUMENT" in out and "No such file or directory" in out and str(tmp_path / "locomo10.json") in out
