"""A current fact that a later hit may have changed, on a question about the present.

An L2 fact is read from episodes by patterns (or a model) that may miss how a value changed: "my favourite show is
Dark" (May) makes a fact, "these days I only watch Fleabag" (August) does not supersede it. So on a question about
the present, a current fact whose episodes share a topic with a later episode among the hits that answers the
question about as well, and does not merely repeat the value, is not trusted over that episode: the later episode
may have changed the value. The caller places the fact after it, with less confidence
(``governance.kmms.confidence.NEWER_EVIDENCE``).

Hits are of one topic when their own vectors are at least ``theta`` similar (connected components of that relation,
so a chain of close hits is one topic; ``topics_of``); a hit with no vector (None in ``similar``) is a topic of its
own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass


def topics_of(n: int, similar: Callable[[int, int], float | None], theta: float) -> list[int]:
    """Each of ``n`` hits' topic: the index of the first hit of its connected component."""
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            s = similar(i, j)
            if s is not None and s >= theta:
                a, b = root(i), root(j)
                parent[max(a, b)] = min(a, b)
    return [root(i) for i in range(n)]


# A later episode that names a fact's value with none of these words repeats the fact ("Dark is still my
# favourite show"); with one of them it may be its change ("I'm into Andor now").
_CHANGE = re.compile(r"\b(?:moved|relocated|switched|changed|now|no longer|new|anymore|any more|nowadays|since|"
                     r"started|joined|left|quit|forget|forgot|instead|used to|stopped|gave up|replaced)\b",
                     re.IGNORECASE)  # fmt: skip


def names_value(text: str, value: str | None) -> bool:
    """``text`` names ``value`` (whole words, any case)."""
    if not value or not value.strip():
        return False
    return re.search(r"(?<!\w)" + re.escape(value.strip()) + r"(?!\w)", text, re.IGNORECASE) is not None


def repeats(text: str, value: str | None) -> bool:
    """``text`` names ``value`` (whole words, any case) and says nothing of a change."""
    return names_value(text, value) and _CHANGE.search(text) is None


@dataclass(frozen=True)
class FactEvidence:
    """What an L2 fact was read from: its episodes, its own time (the later of its validity start and its newest
    episode's time) and its value."""

    episodes: Collection[str]
    latest: int
    value: str | None = None


# A later hit is only a candidate change when it answers the question about as well as the hits the fact was
# read from: at least this share of their best similarity to the question. "I cooked a risotto for my new
# neighbours" (0.10) tells of the same move as "I moved to Porto" (0.25) but not of where one lives.
AS_RELEVANT = 0.6


def newer_in_topic(hits: Sequence[tuple[str, int, str, float]], topic: Sequence[int], fact: FactEvidence,
                   as_relevant: float = AS_RELEVANT) -> int | None:  # fmt: skip
    """The index of the newest hit (episode id, time, text, similarity to the question) later than the fact, of
    the topic of a hit it was read from, about as relevant to the question as those (``as_relevant``), that
    does not merely repeat its value; None when the fact's episodes are not among the hits or nothing later
    tells of their topic otherwise."""
    own = [i for i, h in enumerate(hits) if h[0] in fact.episodes]
    if not own:
        return None
    topics = {topic[i] for i in own}
    floor = as_relevant * max(hits[i][3] for i in own)
    later = [i for i, (episode, at, text, similarity) in enumerate(hits)
             if topic[i] in topics and episode not in fact.episodes and at > fact.latest
             and similarity >= floor and not repeats(text, fact.value)]  # fmt: skip
    return max(later, key=lambda i: (hits[i][1], -i), default=None)
