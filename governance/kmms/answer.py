"""What ``ask`` says, pure: the answering hit's text as an agent reads it (the reads it needs are
``projections.kmms.answer``'s).

An L2 fact answers with its value. An evidence round (L4) answers with its words without their role prefixes, after
the day it was said; when it is one turn of a conversation sent turn by turn, with the turns around it; when it is a
piece of a round cut into pieces, with the round's pieces around it (``evidence_answer``); then the best hit of
another session when that one is about the question too (``runner_up``), read the same way. Measured through the API
with the defaults (k = 5), as the share of the gold answer's words that the answer holds (docs/kmms-measurements.md,
"Rules measured"): on LoCoMo 0.254 with the round alone, 0.354 with the turns around it, 0.408 with its day too; on
REALTALK 0.136, 0.178 and 0.293.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from governance.kmms.phrasing import one_turn, round_piece, strip_roles


def plain_answer(layer: int, fact_value: str | None, text: str) -> str:
    """A hit's answer read alone: an L2 fact's value, else its text without role prefixes."""
    return fact_value if layer == 2 and fact_value else strip_roles(text)


def answer_window(before: str | None, round_text: str, after: str | None, conversation: bool) -> str:
    """An L4 unit's words without role prefixes, with the units just before and after it in its episode that read
    with it, one per line:

    * when it is one turn (``one_turn``), the neighbours that are one turn too. A turn alone is often a question
      whose answer is the next turn ("Did you make it?"), or an answer whose subject is in the one before ("Yes, last
      week!"); the search read the round with them (``governance.kmms.late``, full text's windows), and found it by
      them. On LoCoMo and REALTALK (every turn a user message, the speakers named) the answer's share of the gold
      words goes from 0.254 to 0.354 and from 0.136 to 0.178, against 0.283 and 0.163 with two other turns of the
      episode of the same length; whole rounds of a user and the assistant do not gain so.
    * in a ``conversation``, the pieces of its own round (``round_piece``): the one before when it carries on that
      one, the one after when that carries on it. A piece of a long reply often holds the topic the question names
      and not yet the value it asks ("Sure, here's a detailed influencer marketing campaign plan..." with its budget
      in the next piece). With today's rules otherwise, the share of the gold words: LongMemEval-S's second draw of
      100 (chosen on) 0.395 -> 0.463; BEAM 100K 0.337 -> 0.400, RealMem (every third question) 0.195 -> 0.263, against
      0.426, 0.385 and 0.251 with the same number of other units of the episode."""
    turn = one_turn(round_text)
    keep_before = before is not None and ((turn and one_turn(before)) or (conversation and round_piece(round_text)))
    keep_after = after is not None and ((turn and one_turn(after)) or (conversation and round_piece(after)))
    return "\n".join(strip_roles(t) for t, keep in ((before, keep_before), (round_text, True), (after, keep_after))
                     if keep and t is not None)  # fmt: skip


def said_on(occurred_at: int) -> str:
    """The day an episode was said (its event time, epoch ms, in UTC), as ``ask`` writes it: "[8 May 2023]"."""
    day = datetime.fromtimestamp(occurred_at / 1000, UTC)
    return f"[{day.day} {day:%B} {day.year}]"


def evidence_answer(before: str | None, round_text: str, after: str | None, occurred_at: int | None,
                    conversation: bool) -> str:  # fmt: skip
    """``ask``'s text from an evidence round (``answer_window``), after the day it was said when it has one: "I went
    to the support group yesterday" tells when only with its day (LoCoMo's temporal questions: the answer's share of
    the gold words 0.183 -> 0.446; REALTALK's 0.226 -> 0.487; other questions unchanged)."""
    text = answer_window(before, round_text, after, conversation)
    return text if occurred_at is None else f"{said_on(occurred_at)} {text}"


def runner_up(hits: Sequence[tuple[str | None, float]], answer_session: str | None, about: float) -> int | None:
    """The index in ``hits`` (evidence hits in ranked order, each as (session id, similarity to the question)) of the
    first hit of another session than the answer's whose similarity is at least ``about`` (the search's abstention
    threshold: under it, a hit is not about the question); None when there is none. ``ask`` answers with it too,
    after the answering hit: the first hit is the right one on about two questions in three (LoCoMo's recall@1 0.69),
    and a question of several sessions ("What books has Tim read?") holds its parts in several. Chosen on LoCoMo
    (k = 5, the gold answer's words the answer holds, every question): 0.504 -> 0.564, against 0.517 with a unit of
    the memory drawn at random in its place (a length control); held out, REALTALK 0.318 -> 0.378 (control 0.341),
    BEAM 100K 0.390 -> 0.505 (control 0.455) and RealMem 0.269 -> 0.371 (control 0.324). Without the threshold (any
    other session's first hit): 0.578, 0.394 and 0.510 on the first three, with answers 9-23 % longer on the first
    two (docs/kmms-measurements.md)."""
    for i, (session, similarity) in enumerate(hits):
        if session != answer_session and similarity >= about:
            return i
    return None


def with_runner_up(answer: str, other: str | None) -> str:
    """``ask``'s text: the answering hit's, then, on a line of its own, the runner-up's (``runner_up``) if any."""
    return answer if not other else f"{answer}\n{other}"
