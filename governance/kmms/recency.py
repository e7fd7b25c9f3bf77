"""Newest first within a topic: how a question about the present orders hits that tell the same thing.

"Where do I live?" retrieves both "I live in Cape Town" (March) and "we've moved to Hobart" (June),
often with the older one ranked first: it is phrased closer to the question. The rule: hits whose own
vectors are at least ``theta`` similar are about the same thing (connected components of that
relation, so a chain of close hits is one topic); each topic keeps the slots its hits already hold in
the ranking, and fills them newest first. Hits of different topics never trade places, so what a
top-k holds changes only when a topic spans the k boundary.

Decisions: the permutation is stable (equal times keep their order); a hit with no vector (None in
``similar``) is a topic of its own; ``theta`` > 1 switches the rule off.

Topics, at a looser threshold, also judge an L2 fact (``newer_in_topic``). A fact is read from episodes
by patterns (or a model) that may miss how a value changed: "my favourite show is Dark" (May) makes a
fact, "I've moved on to Fleabag" (August) does not supersede it. So on a question about the present, a
current fact whose episodes share a topic with a later episode among the hits that answers the question
about as well, and does not merely repeat the value, is not trusted over that episode: the later episode
may have changed the value. The caller places the fact after it, with less confidence
(``governance.kmms.confidence.NEWER_EVIDENCE``). A later episode that names the fact's value with a change
word ("forget Severance, I'm obsessed with Fleabag now") is such a hit too, found by the value's words when
the first stage did not rank it (``later_change``); the caller ranks it before the fact's own episodes.
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


def newest_first_within_topics(
    times: Sequence[int], similar: Callable[[int, int], float | None], theta: float
) -> list[int]:
    """The new order, as indices into ``times`` (the hits in ranked order)."""
    return newest_first_by_topic(times, topics_of(len(times), similar, theta))


def newest_first_by_topic(times: Sequence[int], topic: Sequence[int]) -> list[int]:
    """The new order of hits whose topics are known (``topics_of``)."""
    n = len(times)
    topics: dict[int, list[int]] = {}
    for i, t in enumerate(topic):
        topics.setdefault(t, []).append(i)
    order = list(range(n))
    for slots in topics.values():
        if len(slots) > 1:
            for slot, i in zip(slots, sorted(slots, key=lambda i: -times[i]), strict=True):
                order[slot] = i
    return order


# A later episode that names a fact's value with none of these words repeats the fact ("Dark is still my
# favourite show"); with one of them it may be its change ("forget Severance, I'm into Andor now").
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


def names_change(text: str, value: str | None) -> bool:
    """``text`` names ``value`` and a change with it: "forget Severance, I'm obsessed with Fleabag now"."""
    return names_value(text, value) and _CHANGE.search(text) is not None


def later_change(candidates: Sequence[tuple[str, int, str]], fact: FactEvidence) -> int | None:
    """The index of the newest candidate (episode id, time, what its owner said) later than the fact, not one of
    its episodes, that names the fact's value with a change (``names_change``); None when there is none.

    The first stage finds a change by its likeness to the question, and a change often names the new value and
    the old, not what the question asks: "forget Severance, I'm obsessed with Fleabag now" is far from "What's my
    favourite TV show?". Its words name the fact's value, so the caller looks for it by them."""
    later = [i for i, (episode, at, said) in enumerate(candidates)
             if episode not in fact.episodes and at > fact.latest and names_change(said, fact.value)]  # fmt: skip
    return max(later, key=lambda i: (candidates[i][1], -i), default=None)


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
