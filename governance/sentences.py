"""Where one sentence ends and the next begins, the one rule every memory uses (units, voice, perception,
enrichment): after ``.``, ``!`` or ``?`` and white space, or at a line break. Plain text rules, no model.
"""

from __future__ import annotations

import re

SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")


def split_sentences(text: str) -> list[str]:
    """``text`` cut at every sentence break; the pieces as they stand (untrimmed, possibly empty)."""
    return SENTENCE_BREAK.split(text)
