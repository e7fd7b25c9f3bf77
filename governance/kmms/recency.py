"""Newest first within a topic: how a question about the present orders hits that tell the same thing.

"Where do I live?" retrieves both "I live in Cape Town" (March) and "we've moved to Hobart" (June),
often with the older one ranked first: it is phrased closer to the question. The rule: hits whose own
vectors are at least ``theta`` similar are about the same thing (connected components of that
relation, so a chain of close hits is one topic); each topic keeps the slots its hits already hold in
the ranking, and fills them newest first. Hits of different topics never trade places, so what a
top-k holds changes only when a topic spans the k boundary.

Decisions: the permutation is stable (equal times keep their order); a hit with no vector (None in
``similar``) is a topic of its own; ``theta`` > 1 switches the rule off.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def newest_first_within_topics(
    times: Sequence[int], similar: Callable[[int, int], float | None], theta: float
) -> list[int]:
    """The new order, as indices into ``times`` (the hits in ranked order)."""
    n = len(times)
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
                parent[root(j)] = root(i)
    topics: dict[int, list[int]] = {}
    for i in range(n):
        topics.setdefault(root(i), []).append(i)
    order = list(range(n))
    for slots in topics.values():
        if len(slots) > 1:
            for slot, i in zip(slots, sorted(slots, key=lambda i: -times[i]), strict=True):
                order[slot] = i
    return order
