"""Timeline cursor arithmetic: where an instant falls in an about's timeline, the entries around it,
and opaque page tokens.

The timeline of an about is its entries ordered by ``TimelineKey(occurred_at, known_at, seq)``: when it
happened, when HiveMem learnt it, then ``seq``, a stable tiebreak that makes every key unique. The
functions take that ordered sequence (the caller sorts; we do not re-check) or just its length, and
return indices (``range``), so the same arithmetic serves a list in memory and a SQL ``OFFSET``.

Decisions (beyond the brief):

* Keys are strictly increasing (``seq`` breaks every tie); with duplicates a page could skip one.
* ``locate`` returns ``len(keys)`` when every key is before ``at``; ``near``, ``rewind`` and ``forward``
  accept that center (it is "after the end": nothing is at it, everything is before it).
* ``rewind`` / ``forward`` / ``Window`` take 0..200 items (``MAX_SPAN``); a page 1..200.
* Paging is by key, not by index: a page token holds the last key returned, and the next page starts
  strictly after that key (before it, backward). An entry inserted before the cursor later (a late
  event with an earlier ``occurred_at``) is not returned by that walk, and nothing is repeated or
  skipped. Indices of a page are ascending in both directions (nearest last when going backward).
* A token is the urlsafe base64 (no padding) of ``"<occurred_at>.<known_at>.<seq>.<direction>"``;
  decoding accepts only the canonical form (re-encoding must give the same token), so one key has one
  token. Ints are signed 64-bit (Postgres bigint).
"""

from __future__ import annotations

import base64
import binascii
import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

Direction = Literal["forward", "backward"]
DIRECTIONS: frozenset[str] = frozenset(get_args(Direction))

MAX_SPAN = 200
MAX_TOKEN = 128  # characters; a canonical token is at most ~90
_INT64 = (-(2**63), 2**63 - 1)
_TOKEN_RE = re.compile(r"[A-Za-z0-9_-]+")
_INT_RE = re.compile(r"-?(?:0|[1-9][0-9]{0,18})")


class CursorError(ValueError):
    """A page token we did not issue (or no longer understand); the API answers 400."""

    def __init__(self, detail: str, code: str = "INVALID_CURSOR") -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


@dataclass(frozen=True, order=True)
class TimelineKey:
    occurred_at: int  # ms since the epoch, when it happened
    known_at: int  # ms since the epoch, when HiveMem learnt it (log time)
    seq: int  # stable tiebreak

    def __post_init__(self) -> None:
        for name in ("occurred_at", "known_at", "seq"):
            value = getattr(self, name)
            if type(value) is not int or not _INT64[0] <= value <= _INT64[1]:
                raise ValueError(f"{name} must be a 64-bit int, got {value!r}")


@dataclass(frozen=True)
class Window:
    before: int
    after: int

    def __post_init__(self) -> None:
        _check_span("before", self.before)
        _check_span("after", self.after)


def _check_span(name: str, value: int, low: int = 0) -> None:
    if type(value) is not int or not low <= value <= MAX_SPAN:
        raise ValueError(f"{name} must be an int in {low}..{MAX_SPAN}, got {value!r}")


def _check_center(n: int, center: int) -> None:
    if n < 0 or not 0 <= center <= n:
        raise ValueError(f"center must be in 0..{n}, got {center}")


def locate(keys: Sequence[TimelineKey], at: TimelineKey | int) -> int:
    """Index of the first key >= ``at``; an int is an ``occurred_at`` time (first entry at or after it)."""
    if isinstance(at, TimelineKey):
        return bisect_left(keys, at)
    if type(at) is not int:
        raise TypeError(f"at must be a TimelineKey or an int time, got {at!r}")
    return bisect_left(keys, at, key=lambda k: k.occurred_at)


def near(n: int, center: int, w: Window) -> range:
    """The entries around ``center``: up to ``w.before`` before it, itself (if it exists), ``w.after`` after."""
    _check_center(n, center)
    return range(max(0, center - w.before), min(n, center + w.after + 1))


def rewind(n: int, center: int, count: int) -> range:
    """The ``count`` entries strictly before ``center``, ascending (the nearest last)."""
    _check_center(n, center)
    _check_span("count", count)
    return range(max(0, center - count), center)


def forward(n: int, center: int, count: int) -> range:
    """The ``count`` entries strictly after ``center``, ascending (the nearest first)."""
    _check_center(n, center)
    _check_span("count", count)
    start = min(n, center + 1)
    return range(start, min(n, start + count))


def encode_cursor(key: TimelineKey, direction: str) -> str:
    """An opaque page token: resume strictly after (``forward``) or before (``backward``) ``key``."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {sorted(DIRECTIONS)}, got {direction!r}")
    raw = f"{key.occurred_at}.{key.known_at}.{key.seq}.{direction}"
    return base64.urlsafe_b64encode(raw.encode("ascii")).decode("ascii").rstrip("=")


def decode_cursor(token: str) -> tuple[TimelineKey, Direction]:
    """The key and direction of a token from ``encode_cursor``; ``CursorError`` for anything else."""
    if not isinstance(token, str) or not 0 < len(token) <= MAX_TOKEN or not _TOKEN_RE.fullmatch(token):
        raise CursorError("not a page token")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise CursorError("not a page token") from exc
    parts = raw.split(".")
    if len(parts) != 4 or not all(_INT_RE.fullmatch(p) for p in parts[:3]) or parts[3] not in DIRECTIONS:
        raise CursorError("not a page token")
    try:
        key = TimelineKey(int(parts[0]), int(parts[1]), int(parts[2]))
    except ValueError as exc:
        raise CursorError("key out of range") from exc
    direction: Direction = "forward" if parts[3] == "forward" else "backward"
    if encode_cursor(key, direction) != token:
        raise CursorError("not a canonical page token")
    return key, direction


@dataclass(frozen=True)
class Page:
    indices: range  # ascending
    next_cursor: str | None  # resume after this page; the given cursor when the page is empty
    has_more: bool  # entries remain in that direction now (more may arrive later)


def page(keys: Sequence[TimelineKey], count: int, cursor: str | None = None, direction: str = "forward") -> Page:
    """One page of ``count`` entries. Without a cursor it starts at the first entry (``forward``) or the
    last (``backward``); a cursor must have been issued for the same direction."""
    _check_span("count", count, low=1)
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {sorted(DIRECTIONS)}, got {direction!r}")
    n = len(keys)
    key: TimelineKey | None = None
    if cursor is not None:
        key, issued_for = decode_cursor(cursor)
        if issued_for != direction:
            raise CursorError(f"the cursor was issued for {issued_for}, not {direction}")
    if direction == "forward":
        start = 0 if key is None else bisect_right(keys, key)
        indices = range(start, min(n, start + count))
        edge, has_more = (indices[-1] if indices else None), indices.stop < n
    else:
        stop = n if key is None else bisect_left(keys, key)
        indices = range(max(0, stop - count), stop)
        edge, has_more = (indices[0] if indices else None), indices.start > 0
    next_cursor = cursor if edge is None else encode_cursor(keys[edge], direction)
    return Page(indices, next_cursor, has_more)
