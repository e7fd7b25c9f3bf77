"""Token states as stored (governance/token_states.py) and a round read against the question word by word
(governance/kmms/late.py), and the episode model's two figures of that reading (governance/kmms/episode_rank.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from governance import token_states as ts
from governance.kmms.episode_rank import LATE_ABSENT, LOCOMO_LATE_WEIGHTS, LOCOMO_WEIGHTS, episode_features
from governance.kmms.episode_rank import rank_by_episode as rank
from governance.kmms.late import neighbours, wanted, window_maxsim


def test_content_positions_keep_the_pieces_that_carry_content() -> None:
    tokens = ["[CLS]", "what", "board", "games", "has", "nate", "played", "?", "[SEP]"]
    assert [tokens[i] for i in ts.content_positions(tokens)] == ["board", "games", "nate", "played"]
    pieces = ["[CLS]", "i", "love", "ca", "##tan", "!", "[SEP]"]
    assert [pieces[i] for i in ts.content_positions(pieces)] == ["love", "ca", "##tan"]
    assert ts.content_positions(["[CLS]", "the", "a", "[SEP]"]) == [1]  # nothing of content: its first piece
    assert ts.content_positions(["[CLS]", "[SEP]"]) == []
    assert len(ts.content_positions(["[CLS]", *(["word"] * 50), "[SEP]"])) == ts.MAX_TOKENS


def test_the_projection_is_fixed_and_orthonormal() -> None:
    p = ts.projection()
    assert p.shape == (ts.MODEL_DIM, ts.DIM) and p.dtype == np.float32
    assert np.abs(p.T @ p - np.eye(ts.DIM)).max() < 1e-5
    # Derived from SHA-256, not a generator's stream: the same first numbers on every machine and numpy.
    assert [round(float(x), 4) for x in p[0, :3]] == [round(float(x), 4) for x in ts.projection()[0, :3]]
    assert ts.projection() is p  # computed once


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 40), st.integers(0, 2**31 - 1))
def test_stored_states_read_back_within_a_byte_step(n: int, seed: int) -> None:
    states = np.random.default_rng(seed).standard_normal((n, ts.MODEL_DIM)).astype(np.float32)
    data = ts.encode(states)
    assert len(data) == n * ts.DIM
    back = ts.decode(data)
    assert back.shape == (n, ts.DIM)
    assert np.abs(back - ts.project(states)).max(initial=0.0) <= 0.5 / 127 + 1e-6


def test_malformed_states_read_as_none() -> None:
    assert ts.decode(b"").shape == (0, ts.DIM)
    assert ts.decode(b"\x01" * (ts.DIM + 1)).shape == (0, ts.DIM)


def test_a_units_neighbours_are_its_episodes_rounds_before_and_after() -> None:
    assert neighbours("ep-1#4") == ("ep-1#3", "ep-1#5")
    assert neighbours("a#b#0") == ("a#b#-1", "a#b#1")  # an episode id may hold a '#'
    assert neighbours("node-7") is None and neighbours("ep#s2") is None
    assert wanted(["e#1", "e#2"]) == ["e#1", "e#0", "e#2", "e#3"]


def _states(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.standard_normal((n, ts.MODEL_DIM)).astype(np.float32)


def test_window_maxsim_is_the_best_match_of_each_question_token_among_the_round_and_its_neighbours() -> None:
    rng = np.random.default_rng(5)
    raw = {u: _states(rng, k) for u, k in (("e#0", 3), ("e#1", 5), ("e#2", 2), ("f#0", 4))}
    stored = {u: ts.encode(v) for u, v in raw.items()}
    question = ts.project(_states(rng, 4))
    got = window_maxsim(question, ["e#1", "f#0", "e#0"], stored)

    def by_hand(*units: str) -> float:
        rows = np.vstack([ts.decode(stored[u]) for u in units])
        return float((question @ rows.T).max(axis=1).mean())

    assert got["e#1"] == pytest.approx(by_hand("e#0", "e#1", "e#2"), abs=1e-5)
    assert got["e#0"] == pytest.approx(by_hand("e#0", "e#1"), abs=1e-5)  # no round before the first
    assert got["f#0"] == pytest.approx(by_hand("f#0"), abs=1e-5)
    # A unit without states of its own is not read; neither is anything for a question of none.
    assert "g#0" not in window_maxsim(question, ["g#0"], stored)
    assert window_maxsim(np.zeros((0, ts.DIM), dtype=np.float32), ["e#1"], stored) == {}


def test_a_question_read_against_its_own_words_matches_best() -> None:
    rng = np.random.default_rng(9)
    words = _states(rng, 6)
    stored = {"a#0": ts.encode(words[:3]), "b#0": ts.encode(_states(rng, 3))}
    got = window_maxsim(ts.project(words[:3]), ["a#0", "b#0"], stored)
    assert got["a#0"] > 0.95 > got["b#0"]


def test_the_episode_model_reads_the_late_figures_and_falls_back_without_them() -> None:
    fused = [("a#0", 0.2), ("b#0", 0.19), ("c#0", 0.1)]
    similar = [("a#0", 0.6), ("b#0", 0.58), ("c#0", 0.3)]
    bm25 = [("b#0", 3.0), ("a#0", 2.9)]
    plain = episode_features(fused, similar, bm25, 10)
    assert all(f.late_gap == 0.0 and f.late_rank == 0.0 for f in plain.values())
    late = {"b#0": 0.8, "a#0": 0.5}  # c#0 was not read
    read = episode_features(fused, similar, bm25, 10, late=late)
    assert read["b"].late_gap == 0.0 and read["a"].late_gap == pytest.approx(-0.3)
    assert read["c"].late_gap == LATE_ABSENT and read["c"].late_rank == 0.0
    assert read["b"].late_rank == pytest.approx(1 / 11) and read["a"].late_rank == pytest.approx(1 / 12)
    # Without a reading the shipped model is the one without its figures (the late weights count for nothing).
    assert rank(fused, similar, bm25, 10) == rank(fused, similar, bm25, 10, LOCOMO_WEIGHTS)
    assert rank(fused, similar, bm25, 10, late=late) == rank(fused, similar, bm25, 10, LOCOMO_LATE_WEIGHTS, late)
    # The reading moves b, read far better, before a.
    assert rank(fused, similar, bm25, 10, late=late)[0][0] == "b#0"
