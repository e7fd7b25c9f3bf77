"""Who said a unit's text and how, and whom a question is about: the first stage's prior on voices.

A question about the user's own life ("which concerts have I been to?") is answered by what the user *told*
("I saw Portishead live on Friday"), rarely by what the user *asked* ("if I ever get to Kyoto, what are the
must-sees?") or by the assistant's replies. The embedding model does not know that: a question is close to
other questions by form, and a long reply mentions everything a topic holds. So each vector carries the voice
of its text, set by the embedder:

- ``asked``: a user's sentence (or one-sentence round) that is a question;
- ``told``: a user's sentence in the first person that is not a question (a statement about themselves);
- ``reply``: a piece of a conversation without any user line (the assistant's, a tool's, the system's words);
- ``""``: anything else (a round of several sentences as a whole, other user text, documents, notes, nodes).

At search time a question about the user's life (``addressee`` "user") ranks vectors by their cosine distance
plus ``VoiceWeights.adjustments``: ``asked`` and ``reply`` farther, ``told`` nearer; a question about what the
assistant said ("which hotel did you recommend?", ``addressee`` "assistant") ranks them as they are. The
reported similarity (confidence, abstention) stays the plain cosine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from governance.sentences import split_sentences

Voice = Literal["asked", "told", "reply", ""]
Addressee = Literal["user", "assistant"]

_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|im|ive|my|me|mine|myself|we|we're|we've|our|ours|us)\b",
                           re.IGNORECASE)  # fmt: skip
# What the assistant said, did or suggested: "did you", "you recommended", "you said I should", "your advice",
# "our last conversation", "we discussed".
_TO_ASSISTANT = re.compile(
    r"\bdid you\b|\byou\s+(?:\w+\s+)?(?:said|told|recommended|suggested|mentioned|gave|listed|wrote|explained|"
    r"provided|shared|proposed|advised|named|described|showed|came up with)\b|"
    r"\byour (?:answer|suggestion|suggestions|recommendation|recommendations|advice|list|reply|response|tip|tips)\b|"
    r"\bour (?:previous |last |earlier |past )?(?:chat|conversation|discussion|exchange)s?\b|"
    r"\bwe (?:discussed|talked|chatted|spoke)\b|\bdid we (?:discuss|talk|chat|speak)\b",
    re.IGNORECASE,
)


def sentence_voice(text: str) -> Voice:
    """A user's sentence: ``asked`` if it is a question, ``told`` if it speaks of the speaker, else ``""``."""
    t = text.strip()
    if t.endswith("?"):
        return "asked"
    return "told" if _FIRST_PERSON.search(t) else ""


def unit_voice(said: str, *, conversation: bool, user_lines: bool) -> Voice:
    """A unit's own vector: ``said`` is the text embedded for it (``phrasing.embedding_text``). A piece of a
    conversation without a user line is a ``reply``. A user's round of one sentence (of three words or more, as
    ``units.sentences_of`` counts them; shorter ones add no vector of their own) has that sentence's voice
    when its short sentences do not say otherwise: "Okay. How long until I see results?" is asked, "I started my
    new job at Halcyon Health on Monday. Cool. Anything similar?" tells and asks, and has none. A round of
    several has none (its sentences carry theirs)."""
    if not conversation:
        return ""
    if not user_lines:
        return "reply"
    parts = [s for s in split_sentences(said) if s.strip()]
    if sum(len(s.split()) >= 3 for s in parts) > 1:
        return ""
    voices = {sentence_voice(s) for s in parts} - {""}
    return voices.pop() if len(voices) == 1 else ""


def addressee(question: str) -> Addressee:
    """Whom the question is about: what the assistant said or did ("assistant"), else the user's own life."""
    return "assistant" if _TO_ASSISTANT.search(question) else "user"


@dataclass(frozen=True)
class VoiceWeights:
    """Added to a vector's cosine distance on a question about the user (docs/kmms.md, "Retrieval"). Measured on
    ``hivemem bench memory``, these defaults took session recall@5 by vector from 85.6 % to 91.7 % (93.8 % from
    83.6 % with long replies, ``--shape long``)."""

    asked: float = 0.10
    told: float = 0.10
    reply: float = 0.20

    def adjustments(self, question: str) -> dict[str, float]:
        """Distance adjustment per voice for ``question`` (positive: farther)."""
        if addressee(question) == "assistant":
            return {"asked": 0.0, "told": 0.0, "reply": 0.0}
        return {"asked": self.asked, "told": -self.told, "reply": self.reply}
