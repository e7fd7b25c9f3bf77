"""When retrieval may stop drilling down: the minimum depth a query asks for, and whether a layer suffices.

Retrieval drills L1 -> L2 -> L3 -> L4 (``DRILL_ORDER``) and stops at the first sufficient layer.
A layer above the evidence answers when it is close enough to the question; with all-MiniLM-L6-v2's lower cosines
at the seed's 0.75, that is seldom, and the evidence answers (docs/kmms.md, the drill).

* Minimum depth by signal words (seed §3.2), strongest first: verbatim ("exactly", "quote", "word for
  word", ...) needs L4; specificity ("specifically", "in detail", "example", ...) needs L3 or deeper;
  general ("tell me about", "overview", ...) and no signal at all are satisfied from L1.
* A layer at or below the minimum depth is sufficient when its best result has similarity >= tau (default
  0.75; for a question about the present, an L2 fact's from the lower ``threshold``) and covers the query's
  entities: every query entity known in L0 is in the result's entity set. Entities L0 has never seen cannot be
  covered by any layer, so they do not block.
* Checks run in a fixed order (depth, then similarity, then coverage) and the first failure is the
  reason, so a trace shows why the drill went on.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

TAU = 0.75
DRILL_ORDER: tuple[int, ...] = (1, 2, 3, 4)

# (class, minimum layer, cue pattern), strongest class first; the first class with a cue wins.
_SIGNALS: tuple[tuple[str, int, re.Pattern[str]], ...] = (
    (
        "verbatim",
        4,
        re.compile(
            r"\b(?:exactly|exact words?|verbatim|word for word|word-for-word|precise words?|"
            r"quote[sd]?|quoting|quotation)\b"
        ),
    ),
    (
        "specificity",
        3,
        re.compile(r"\b(?:specifically|specifics?|precisely|in detail|details?|detailed|examples?|for instance)\b"),
    ),
    (
        "general",
        1,
        re.compile(
            r"\b(?:tell me about|what do you know|overview|summari[sz]e|summary|in general|generally|broadly|gist)\b"
        ),
    ),
)


class MinDepth(NamedTuple):
    layer: int
    reason: str  # e.g. "specificity: 'specifically'", "default: no signal"


@dataclass(frozen=True)
class LayerVerdict:
    sufficient: bool
    reason: str


def min_depth(query: str) -> MinDepth:
    """The shallowest layer that may answer ``query``, and why."""
    q = " ".join(query.lower().replace("’", "'").split())
    for cls, layer, pattern in _SIGNALS:
        m = pattern.search(q)
        if m:
            return MinDepth(layer, f"{cls}: '{m.group(0)}'")
    return MinDepth(1, "default: no signal")


def covers(query_entities: Iterable[str], known_in_l0: Iterable[str], result_entities: Iterable[str]) -> bool:
    """True when every query entity that L0 knows is among the result's entities (case-insensitive)."""
    known = {e.casefold() for e in known_in_l0}
    have = {e.casefold() for e in result_entities}
    return all(e.casefold() in have for e in query_entities if e.casefold() in known)


def threshold(layer: int, tau: float, about_present: bool, tau_current: float) -> float:
    """The best similarity from which ``layer`` answers: ``tau``; for a question about the present (temporal intent
    CURRENT, its facts the ones valid now), an L2 fact's from ``tau_current`` when lower. A fact follows a change
    of value ("I moved to Globex" supersedes "I work at Acme"); the evidence's order does not put the newer first."""
    return min(tau, tau_current) if layer == 2 and about_present else tau


def judge_layer(
    layer: int,
    best_similarity: float | None,
    covered: bool,
    min_layer: int,
    tau: float = TAU,
    min_reason: str | None = None,
) -> LayerVerdict:
    """Whether ``layer``'s best result answers the query. ``best_similarity`` None: the layer had no result."""
    if layer < min_layer:
        why = f" ({min_reason})" if min_reason else ""
        return LayerVerdict(False, f"below minimum depth L{min_layer}{why}")
    if best_similarity is None:
        return LayerVerdict(False, "no result")
    if math.isnan(best_similarity) or best_similarity < tau:
        return LayerVerdict(False, f"best similarity {best_similarity:.2f} < {tau:.2f}")
    if not covered:
        return LayerVerdict(False, "entities not covered")
    return LayerVerdict(True, "sufficient")
