"""The retrieval units of an L4 episode: what is embedded and full-text indexed.

A conversation is cut into rounds (a user turn and the replies that follow it, up to the next user
turn), because a question usually matches what the user said together with the answer to it; a named turn's
line carries its speaker ("user: Melanie: ...", ``governance.transcripts.turn_line``), an unnamed one is
"user: ..."; other content is cut into paragraphs of at most ~``MAX_CHARS`` characters. Hits on units roll up to their
episode (and session). Pure, so the embedder and the read model cut the same units.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from contracts.kmms_records import KmmsEpisode
from governance.sentences import split_sentences
from governance.transcripts import turn_line

MAX_CHARS = 1_200  # ~256 word pieces, the embedding model's window
MAX_SENTENCES = 8  # sentence vectors per unit, beyond its own
SENTENCE = "~s"  # a sentence vector's id: <unit id>~s<n>
_SENTENCE_ID = re.compile(r"~s[0-9]+$")


@dataclass(frozen=True)
class Unit:
    unit_id: str
    ordinal: int
    text: str


def _paragraphs(text: str) -> list[str]:
    out: list[str] = []
    current = ""
    for para in (p.strip() for p in text.split("\n")):
        if not para:
            continue
        while len(para) > MAX_CHARS:  # one very long paragraph: cut at a space
            cut = para.rfind(" ", 0, MAX_CHARS)
            cut = cut if cut > MAX_CHARS // 2 else MAX_CHARS
            if current:
                out.append(current)
                current = ""
            out.append(para[:cut])
            para = para[cut:].strip()
        if current and len(current) + len(para) + 1 > MAX_CHARS:
            out.append(current)
            current = ""
        current = f"{current}\n{para}" if current else para
    if current:
        out.append(current)
    return out


def units_of(ep: KmmsEpisode) -> list[Unit]:
    if ep.turns:
        rounds: list[list[str]] = []
        for t in ep.turns:
            line = turn_line(t.role, t.content, t.name)
            if t.role == "user" or not rounds:
                rounds.append([line])
            else:
                rounds[-1].append(line)
        texts = [piece for r in rounds for piece in _paragraphs("\n".join(r))]
    else:
        texts = _paragraphs(ep.content)
    return [Unit(f"{ep.episode_id}#{i}", i, t) for i, t in enumerate(texts or [ep.content[:MAX_CHARS]])]


def episode_of(unit_id: str) -> str:
    """The episode of a unit's id (``units_of``: ``<episode id>#<n>``; an episode id may itself hold a '#')."""
    return unit_id.rsplit("#", 1)[0]


def first_of_each_episode(ranked: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
    """Of (unit id, score) in ranked order, each episode's first: an episode ranks by its best unit, so the others
    change no episode's place."""
    seen: set[str] = set()
    out: list[tuple[str, float]] = []
    for unit_id, score in ranked:
        episode = episode_of(unit_id)
        if episode not in seen:
            seen.add(episode)
            out.append((unit_id, score))
    return out


def sentences_of(unit_id: str, text: str) -> list[Unit]:
    """A unit's sentences of three words or more (the first ``MAX_SENTENCES``), each embedded on its own
    besides the unit: a fact said in passing ("Anyway, my go-to café is The Daily Grind.") inside a round
    about something else is drowned in the round's vector, and found by its sentence's. None when the
    text is one sentence (the unit's own vector is that sentence's)."""
    said = [s.strip() for s in split_sentences(text) if len(s.split()) >= 3]
    if len(said) < 2:
        return []
    return [Unit(f"{unit_id}{SENTENCE}{i}", i, s) for i, s in enumerate(said[:MAX_SENTENCES])]


def whole_round_id(unit_id: str) -> str:
    """The id of a round's second vector, its whole text with the replies (``HIVEMEM_KMMS_ROUND_WHOLE``): one of
    the unit's own family of vectors, after its sentences', so the search ranks the round by the best of them."""
    return f"{unit_id}{SENTENCE}{MAX_SENTENCES}"


def is_sentence(vector_id: str) -> bool:
    return bool(_SENTENCE_ID.search(vector_id))


def unit_of(vector_id: str) -> str:
    """The unit a unit's or sentence's vector id belongs to (``<unit id>~s<n>`` -> ``<unit id>``)."""
    return _SENTENCE_ID.sub("", vector_id)
