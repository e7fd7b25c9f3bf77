"""When an L1 abstraction is rewritten: word-set Jaccard between the current and the proposed text.

A re-consolidation that says roughly the same thing (Jaccard >= 0.70) only refreshes ``last_verified``;
one that says something different enough becomes a new version that SUPERSEDES the old one, so the
history of how an understanding changed is kept instead of silently overwritten.

Decisions (beyond the seed): words are ``[a-z0-9]+`` runs of the lower-cased text (punctuation and
accents split words; no stemming, no stop words — deterministic and cheap); two texts with no words
at all are identical (Jaccard 1.0), one empty and one not are disjoint (0.0).
"""

from __future__ import annotations

import re
from typing import Literal

VERIFY_FROM = 0.70

_WORD = re.compile(r"[a-z0-9]+")

L1Action = Literal["NEW_VERSION", "VERIFY"]


def words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def jaccard(a: str, b: str) -> float:
    wa, wb = words(a), words(b)
    if not wa and not wb:
        return 1.0
    return len(wa & wb) / len(wa | wb)


def l1_action(current: str | None, new: str, threshold: float = VERIFY_FROM) -> L1Action:
    """NEW_VERSION (supersedes ``current``) when there is none or Jaccard < threshold; else VERIFY."""
    if current is None:
        return "NEW_VERSION"
    return "VERIFY" if jaccard(current, new) >= threshold else "NEW_VERSION"
