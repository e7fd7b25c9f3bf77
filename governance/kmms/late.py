"""Late interaction: a round read against the question word by word, from the embedding model's own token states.

A sentence embedding pools a text's token states into one vector, and a question and its evidence often share one
or two words of sense ("board games" and "we played some Chess") that the pooled vectors drown. The same forward
pass that computes a round's vector also computes one state per token; kept (``governance.token_states``), they
let the search read each word of the question against each word of a round (MaxSim, after ColBERT: for each
question token its best match in the round, averaged over the question's tokens). No second model runs: the
embedder keeps the states it computed anyway, and the search embeds the question once.

A round is read with its neighbours (``window_maxsim``), as full text reads it (``governance.kmms.bm25.windows``):
an answer rarely repeats its question's words, the turn it answers does. The search reads the first stage's
``CANDIDATES`` best rounds so, and the episode model (``governance.kmms.episode_rank``) reads two figures of it per
episode. Measured on LoCoMo (the episode model refitted on one half of the conversations and scored on the other,
both ways): session recall@5 0.886 -> 0.901 (docs/kmms-measurements.md, "Rules measured"). Pure: the caller reads
the token states from the read model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from governance.token_states import DIM

CANDIDATES = 100  # the first stage's rounds the search reads against the question, with their neighbours

# A search's reading word by word: the question's token states (``governance.token_states.project``ed) and, by
# unit id, the stored states of the rounds it reads (as stored: ``governance.token_states.encode``).
LateStates = tuple[np.ndarray, Mapping[str, bytes]]


def neighbours(unit_id: str) -> tuple[str, str] | None:
    """The ids of the units just before and after ``unit_id`` in its episode (``<episode id>#<n>``); None for an id
    of another shape."""
    episode, _, n = unit_id.rpartition("#")
    if not episode or not n.isdigit():
        return None
    return f"{episode}#{int(n) - 1}", f"{episode}#{int(n) + 1}"


def wanted(units: Sequence[str]) -> list[str]:
    """The units whose token states ``window_maxsim`` reads for ``units``: each, and its neighbours."""
    out: dict[str, None] = {}
    for u in units:
        out[u] = None
        for v in neighbours(u) or ():
            out[v] = None
    return list(out)


def window_maxsim(question: np.ndarray, units: Sequence[str], states: Mapping[str, bytes]) -> dict[str, float]:
    """Each of ``units`` (with token states in ``states``, as stored) read against the question with its neighbours:
    for each question token the best match among the unit's and its neighbours' tokens, averaged over the question's
    tokens. A unit without states of its own is left out. One product of the question with every state read."""
    if question.size == 0:
        return {}
    ids = [u for u in wanted(units) if len(states.get(u, b"")) >= DIM and len(states[u]) % DIM == 0]
    if not ids:
        return {}
    rows = np.frombuffer(b"".join(states[u] for u in ids), dtype=np.int8).reshape(-1, DIM)
    starts = np.cumsum([0, *(len(states[u]) // DIM for u in ids[:-1])])
    # Each question token's best match in each id's states (``decode``'s scale folded into the question).
    best = np.maximum.reduceat((question / 127.0).astype(np.float32) @ rows.T, starts, axis=1)
    col = {u: i for i, u in enumerate(ids)}
    mine = [u for u in units if u in col]
    if not mine:
        return {}
    own = np.array([col[u] for u in mine])
    near = [neighbours(u) or (u, u) for u in mine]
    before = np.array([col.get(b, col[u]) for u, (b, _) in zip(mine, near, strict=True)])
    after = np.array([col.get(a, col[u]) for u, (_, a) in zip(mine, near, strict=True)])
    read = np.maximum(best[:, own], np.maximum(best[:, before], best[:, after])).mean(axis=0)
    return {u: float(r) for u, r in zip(mine, read, strict=True)}
