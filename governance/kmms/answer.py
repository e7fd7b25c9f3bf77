"""What ``ask`` says, pure: the answering hit's text as an agent reads it (the reads it needs are
``projections.kmms.answer``'s).

An L2 fact answers with its value. An evidence round (L4) answers with its words without their role prefixes, after
the day it was said, and, when it is one turn of a conversation sent turn by turn, with the turns around it
(``evidence_answer``). Measured through the API with the defaults (k = 5), as the share of the gold answer's words
that the answer holds (docs/kmms-measurements.md, "Rules measured"): on LoCoMo 0.254 with the round alone, 0.354 with
the turns around it, 0.408 with its day too; on REALTALK 0.136, 0.178 and 0.293.
"""

from __future__ import annotations

from datetime import UTC, datetime

from governance.kmms.phrasing import one_turn, strip_roles


def answer_window(before: str | None, round_text: str, after: str | None) -> str:
    """An L4 round's words without role prefixes and, when it is one turn (``one_turn``), with the turns just before
    and after it in its episode that are one turn too, one per line. A turn alone is often a question whose answer
    is the next turn ("Did you make it?"), or an answer whose subject is in the one before ("Yes, last week!"); the
    search read the round with them (``governance.kmms.late``, full text's windows), and found it by them. On LoCoMo
    and REALTALK (every turn a user message, the speakers named) the answer's share of the gold words goes from
    0.254 to 0.354 and from 0.136 to 0.178, against 0.283 and 0.163 with two other turns of the episode of the same
    length; rounds of a user and the assistant answer alone."""
    if not one_turn(round_text):
        return strip_roles(round_text)
    return "\n".join(strip_roles(t) for t in (before, round_text, after) if t is not None and one_turn(t))


def said_on(occurred_at: int) -> str:
    """The day an episode was said (its event time, epoch ms, in UTC), as ``ask`` writes it: "[8 May 2023]"."""
    day = datetime.fromtimestamp(occurred_at / 1000, UTC)
    return f"[{day.day} {day:%B} {day.year}]"


def evidence_answer(before: str | None, round_text: str, after: str | None, occurred_at: int | None) -> str:
    """``ask``'s text from an evidence round (``answer_window``), after the day it was said when it has one: "I went
    to the support group yesterday" tells when only with its day (LoCoMo's temporal questions: the answer's share of
    the gold words 0.183 -> 0.446; REALTALK's 0.226 -> 0.487; other questions unchanged)."""
    text = answer_window(before, round_text, after)
    return text if occurred_at is None else f"{said_on(occurred_at)} {text}"
