"""How a fact and a unit read to the embedding model and to full-text search.

A fact's key is a label (``residence``, ``employer``, ``pet_dog``); a question asks "where do I
live?" or "who do I work for?". A fact is therefore embedded as a short sentence in a question's
words (its key family's cue and the value), and indexed for full text with every cue. A conversation round is embedded
from the user's lines without ``role:`` prefixes: prefixes and replies dilute it (measured with
all-MiniLM-L6-v2: "Where do I live now?" against a round with them 0.29, the user's line 0.41); a round between
named people from both people's lines (``between_people``).
"""

from __future__ import annotations

import re

from governance.kmms.speakers import is_name

# key (or key prefix before "_") -> how people ask about it
CUES: dict[str, str] = {
    "residence": "where I live, my home, the city I live in, where I am based",
    "employer": "where I work, the company I work for, my job",
    "job_title": "my job title, my role, what I do for work",
    "preferred": "what I prefer, my preference",
    "favourite": "my favourite",
    "likes": "what I like, what I enjoy",
    "pet": "my pet, my animal",
    "learning": "what I am learning",
    "skill": "what I know, my skills",
    "event": "what I did, what happened",
    "opinion": "what they think, their opinion",
    "partner": "my partner", "wife": "my wife", "husband": "my husband", "spouse": "my spouse",
    "manager": "my manager, my boss", "mentor": "my mentor", "mother": "my mother", "father": "my father",
    "sister": "my sister", "brother": "my brother", "son": "my son", "daughter": "my daughter",
    "friend": "my friend", "colleague": "my colleague",
}  # fmt: skip
_ROLE = re.compile(r"^(?:user|assistant|system|tool): ", re.MULTILINE)
_NAME_LABEL = re.compile(r"([^:\n]{1,60}):\s")  # a named turn's words open with "Name: "
_SPEAKER = re.compile(r"^\s*(?P<role>user|human|assistant|ai|bot|system|tool)\s*:\s*", re.IGNORECASE)
OWNER_ROLES = frozenset({"user", "human"})


def speaker_lines(text: str) -> list[tuple[str | None, str]]:
    """(speaker, words) for each line of a transcript ("user: ...", "assistant: ..."), the role prefix taken
    off and lower-cased. A line without a prefix continues the turn above it: a long reply's later paragraphs
    are the assistant's, not the owner's. Lines before any prefix (a note, a document) have no speaker."""
    out: list[tuple[str | None, str]] = []
    role: str | None = None
    for line in text.splitlines():
        m = _SPEAKER.match(line)
        if m:
            role = m.group("role").lower()
        out.append((role, line[m.end() :] if m else line))
    return out


def named_lines(text: str) -> list[tuple[str | None, str | None, str]]:
    """(speaker, name, words) for each line of a transcript: the role as ``speaker_lines`` reads it; the name of
    the named turn the line belongs to (its label, "user: Melanie: ...", as ``turn_line`` writes it; a line
    continuing a turn shares its name), None for an unnamed turn's; the words without the role and the label."""
    out: list[tuple[str | None, str | None, str]] = []
    role: str | None = None
    name: str | None = None
    for line in text.splitlines():
        m = _SPEAKER.match(line)
        if not m:
            out.append((role, name, line))
            continue
        role, body = m.group("role").lower(), line[m.end() :]
        label = _NAME_LABEL.match(body)
        name = label.group(1).strip() if label is not None and is_name(label.group(1).strip()) else None
        out.append((role, name, body[label.end() :] if name is not None and label is not None else body))
    return out


def people(text: str) -> frozenset[str]:
    """The names of a transcript's named speakers when it is a conversation between people (two names or more);
    none otherwise: a chat whose only named speaker is its user is the memory owner's, by whatever name."""
    return people_in(named_lines(text))


def people_in(lines: list[tuple[str | None, str | None, str]]) -> frozenset[str]:
    """``people`` of a transcript already read by ``named_lines``."""
    names = frozenset(name for _, name, _ in lines if name is not None)
    return names if len(names) >= 2 else frozenset()


def is_owner(role: str | None) -> bool:
    """The memory's owner said it: a user's (or human's) turn, or text that is no conversation."""
    return role is None or role in OWNER_ROLES


def cue(key: str) -> str:
    return CUES.get(key) or CUES.get(key.split("_", 1)[0], "")


def fact_sentence(entity: str, key: str, value: str) -> str:
    """What a fact's vector is computed from: short, in the words of a question about it
    ("where I live: Porto" scores 0.49 against "Where do I live?", the key and the quote 0.40)."""
    first = cue(key).split(",")[0]
    if entity.lower() == "user" and first:
        return f"{first}: {value}"
    return f"{entity} {key.replace('_', ' ')}: {value}"


def fact_terms(entity: str, key: str, value: str) -> str:
    """What full-text search matches a fact on, besides its quote: every cue, the key, the value."""
    return f"{entity} {cue(key)} {key.replace('_', ' ')} {value}"


def between_people(unit_text: str) -> bool:
    """A round of a conversation between named people: every turn in it opens with its speaker's name, as
    ``turn_line`` writes a named turn ("user: Caroline: ...", "assistant: Melanie: ..."), and one of them is not
    the user's. The other side is then a person in the conversation, not an assistant's reply."""
    lines = [(role, name) for role, name, _ in named_lines(unit_text) if role is not None]
    return any(role != "user" for role, _ in lines) and all(name is not None for _, name in lines)


def embedding_text(unit_text: str, replies: bool = False) -> str:
    """A round's vector is computed from what the user said in it (an assistant's replies, often long and
    generic, drown it: on the memory benchmark's corpus, session recall@5 by vector went from 0.57
    with whole rounds to 0.62 with the user's lines); a unit without user lines loses its prefixes. A round
    between named people (``between_people``) is embedded whole, without its prefixes: both speakers' words are
    the memory (LoCoMo's and REALTALK's chats with the second speaker as the assistant, ``hivemem bench memory
    --roles pair``: session recall@5 by vectors alone 0.771 -> 0.812 and 0.735 -> 0.762, docs/kmms.md). With
    ``replies`` every round is embedded whole, the replies' words too (``HIVEMEM_KMMS_ROUND_REPLIES``, off: on public
    user-assistant chats, session recall@5 by the default search RealMem +1.2, BEAM -1.8, docs/kmms.md)."""
    if replies or between_people(unit_text):
        return _ROLE.sub("", unit_text)
    said = user_lines(unit_text)
    return "\n".join(said) if said else _ROLE.sub("", unit_text)


def user_lines(unit_text: str) -> list[str]:
    """The lines of a unit the user said, without their ``user:`` prefix: a user's turn's first line and the lines
    that continue it (a message of several lines is one turn: ``speaker_lines``). Before 2026-12-05 only the lines
    that began ``user: `` were read, and a user's message of several lines was embedded from its first line."""
    return [words for role, words in speaker_lines(unit_text) if role == "user"]


def strip_roles(unit_text: str) -> str:
    return _ROLE.sub("", unit_text)


def one_turn(unit_text: str) -> bool:
    """A unit that is one turn of a conversation: exactly one of its lines opens with a speaker's role (a message
    of several lines is one turn, ``speaker_lines``). A chat between people sent turn by turn is a run of them; a
    user's round with the assistant's replies holds two turns or more, a note or a document none."""
    return sum(1 for line in unit_text.splitlines() if _SPEAKER.match(line)) == 1


def round_piece(unit_text: str) -> bool:
    """A unit of a conversation that carries on the round of the unit before it: none of its lines opens with a
    speaker's role. A round longer than a unit (``governance.kmms.units.MAX_CHARS``: most often a long reply) is
    cut at its paragraphs, and every piece after the first starts mid-round. (A note's or a document's units have
    no role either: only a conversation's are pieces.)"""
    return not any(_SPEAKER.match(line) for line in unit_text.splitlines())
