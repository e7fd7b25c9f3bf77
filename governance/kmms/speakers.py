"""The names of a conversation's speakers are labels, not what a question asks about.

A named turn reads ``user: Melanie: I painted a lake.`` (``governance.transcripts.turn_line``; a transcript pasted as
"Melanie: ..." reads the same), and its vector is computed from ``Melanie: I painted a lake.``. Every one of
Melanie's turns carries her name, and so does "What did Melanie paint?": to all-MiniLM-L6-v2 the shared name makes
the question close to all of them, and her turn about painting is one among hundreds. So the question is embedded
without the memory's speakers' names ("What did paint?"), which leaves what it asks about; full text still reads
the name (docs/kmms-measurements.md, "Rules measured": by vectors alone, LoCoMo's session recall@5 went from 0.675
to 0.794 and REALTALK's from 0.688 to 0.781).

A label is a speaker's when it is a name (one to three words, each capitalised, no digits) that begins at least
``MIN_TURNS`` of the memory's rounds: a pasted "Note: ..." once is not one.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable

MIN_TURNS = 2
_NAME_WORD = re.compile(r"[^\W\d_][\w'’.\-]*")


def is_name(label: str) -> bool:
    """One to three words, each starting with a capital letter and holding no digit: "Melanie", "Jo Ann", "Mr.
    Smith"; not "note to self", "Q1", "TODO list items here"."""
    words = label.split(" ")
    return 1 <= len(words) <= 3 and all(
        _NAME_WORD.fullmatch(w) is not None and w[0].isupper() and not any(c.isdigit() for c in w) for w in words
    )


def speakers(labels: Iterable[str | None], min_turns: int = MIN_TURNS) -> frozenset[str]:
    """The speakers' names among rounds' leading labels (None: a round without one): those that are names and
    begin at least ``min_turns`` rounds."""
    counts = Counter(label.strip() for label in labels if label and is_name(label.strip()))
    return frozenset(name for name, n in counts.items() if n >= min_turns)


def without_speakers(question: str, names: Collection[str]) -> str:
    """``question`` without the whole-word mentions of ``names`` (and their possessive: "Melanie's"), spaces
    tidied; the question itself when nothing else would be left ("Melanie?")."""
    if not names:
        return question
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    stripped = re.sub(rf"(?<![\w'’])(?:{alternatives})(?:['’]s)?(?![\w'’])", "", question)
    stripped = re.sub(r"\s+([?.!,;:])", r"\1", re.sub(r"\s{2,}", " ", stripped)).strip()
    return stripped if re.search(r"\w", stripped) else question
