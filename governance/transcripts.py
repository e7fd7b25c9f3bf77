"""A conversation as text: each turn a transcript line (``role: text``, a named speaker's ``role: name: text``), the
lines joined by newlines, and the turns' layout over that text. Shared by the features that hold conversations:
KMMS renders, stores and cuts them (governance/kmms); a KSTAR bundle carries the layout (projections/kstar/io.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from contracts.models import EpisodeTurn


class Turn(Protocol):
    """A turn as the wire (``EpisodeTurn``) and the KMMS log (``KmmsTurn``) both hold it."""

    @property
    def role(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def name(self) -> str: ...


def turn_line(role: str, content: str, name: str = "") -> str:
    """A turn as a transcript line: ``role: content``, a named speaker's ``role: name: content`` ("user: Melanie: I
    painted a lake."). The role prefix stays first, so every reader of ``role: `` lines (``speaker_lines``,
    ``embedding_text``, ``strip_roles``) reads a named turn as the role's, and the name is part of the words it
    says: embedded, indexed for full text, shown in a hit."""
    return f"{role}: {name}: {content}" if name else f"{role}: {content}"


def render(turns: Sequence[Turn], content: str) -> str:
    """The turns as transcript lines joined by newlines; ``content`` when there are none."""
    return "\n".join(turn_line(t.role, t.content, t.name) for t in turns) if turns else content


def turn_layout(turns: Sequence[Turn]) -> list[dict[str, object]]:
    """Where each turn lies in the content ``render`` made of them: its role, its speaker's name and its length in
    characters. With that content it gives the turns back (``turns_from_layout``): the read model keeps a
    conversation's rounds (an export carries them, an import cuts the same units) without holding its text twice."""
    return [{"role": t.role, "name": t.name, "chars": len(t.content)} for t in turns]


def turns_from_layout(content: str, layout: Sequence[Mapping[str, Any]]) -> list[EpisodeTurn]:
    """The turns ``layout`` (``turn_layout``) finds in ``content``; [] when they do not render back to it exactly
    (no layout, a layout of other content, or one a turn cannot be made of): the episode is then its content."""
    turns: list[EpisodeTurn] = []
    at = 0
    try:
        for i, item in enumerate(layout):
            role, name, chars = str(item["role"]), str(item["name"]), int(item["chars"])
            head = ("\n" if i else "") + turn_line(role, "", name)  # the line's prefix, as ``render`` writes it
            if chars < 1 or not content.startswith(head, at):
                return []
            at += len(head) + chars
            turns.append(EpisodeTurn(role=role, content=content[at - chars : at], name=name))  # type: ignore[arg-type]
    except (KeyError, TypeError, ValueError):  # a pydantic ValidationError is a ValueError
        return []
    return turns if at == len(content) and render(turns, "") == content else []
