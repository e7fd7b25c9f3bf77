"""The temporal intent of a query (seed Table 2): which versions of memory may answer it.

* CURRENT — only facts valid now ("now", "currently", "still", "latest", "where do I live").
* EVOLUTION — every version over time ("how has X changed", "history of", "timeline", "used to ... and
  now"); a date phrase, if any, bounds it.
* WINDOW — events that happened in a range ("what did I buy in March", "last week", "since June").
* POINT_IN_TIME — the state that held at a moment ("where did I live in March", "as of 2025-06-01").
* UNSPECIFIED — no temporal cue.

Decisions (beyond the seed):

* Ranges are closed, in ms since the epoch: ``start_ms <= t <= end_ms``; ``end_ms`` is the last ms of
  the period (the house convention of ``consolidation.week_end_ms``). None is an open side.
* WINDOW vs POINT_IN_TIME is decided by the verb: an event verb ("did I buy/say/do", "said",
  "happened", a progressive "was I doing") gives WINDOW; a past state verb ("lived", "worked", "was",
  "had", "did I live/work/use") gives POINT_IN_TIME, as do "as of X" and "at the start/end of X". No
  verb either way: WINDOW. A POINT_IN_TIME keeps the period: ``start_ms`` is its start and ``end_ms``
  its end, and the point the state is evaluated at is ``end_ms`` (the state at the end of March is the
  answer to "where did I live in March"; a reader may widen to anything valid within the period).
* Relative dates resolve against ``asked_at_ms`` in ``tz`` (default UTC). A month, a day or a season
  without a year is the most recent one that started on or before the question ("in May" on
  2026-04-15 is May 2025); "last March" / "last Monday" skip the current one. A weekday is the most
  recent such day, today included. "last week/month/year" are calendar periods (weeks start Monday);
  "the past/last N days", "in the last two weeks" roll back from the question; "since X" runs from
  X's start to the question.
* An anchor we cannot date ("before I moved", "after John joined") is returned in ``anchor`` with
  the open range (None, None); a state question about it is POINT_IN_TIME with ``end_ms`` None.
* "today" without an event verb ("where do I live today") is CURRENT; "what did I do today" is a WINDOW.
* Regex only, deterministic, no date library: the same query and instant always give the same intent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Literal

from governance.kmms import period_parts as periods

Kind = Literal["CURRENT", "EVOLUTION", "WINDOW", "POINT_IN_TIME", "UNSPECIFIED"]
Period = tuple[datetime, datetime]  # internal: [start, end), end exclusive
Span = tuple[datetime | None, datetime | None]  # a period with possibly open sides

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
_DAY = timedelta(days=1)


@dataclass(frozen=True)
class TemporalIntent:
    kind: Kind
    start_ms: int | None = None  # inclusive; None: open
    end_ms: int | None = None  # inclusive (last ms of the period); None: open
    cues: tuple[str, ...] = ()  # the phrases that decided it, for the response metadata
    anchor: str | None = None  # an event the range is relative to that we could not date ("I moved")
    # the verb phrase among ``cues`` ("stayed", "did I live"): it says what, not only when, so a search keeps it
    verb_cue: str | None = field(default=None, compare=False)


_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december")  # fmt: skip
_MONTH_NO = {m: i + 1 for i, m in enumerate(_MONTHS)} | {m[:3]: i + 1 for i, m in enumerate(_MONTHS)} | {"sept": 9}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {w: i + 1 for i, w in enumerate(
    ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
)} | {"a": 1, "an": 1, "a few": 3, "few": 3, "a couple of": 2, "couple of": 2}  # fmt: skip
_SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}  # meteorological, north

_MON_FULL = "(?:" + "|".join(_MONTHS) + ")"
_MON = r"(?:" + "|".join(_MONTHS) + r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
_WD = "(?:" + "|".join(_WEEKDAYS) + ")"
_YEAR = r"(?:19|20)\d{2}"
_ORD = r"\d{1,2}(?:st|nd|rd|th)?"
_NUM = r"(?:\d{1,3}|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + ")"  # "a few" before "a"
_UNIT = r"(?:day|week|month|year)s?"
_SEASON = (
    r"(?:(?:this|last|the) (?:summer|winter|spring|autumn|fall)|summer|winter|spring|autumn)"
    rf"(?:,? (?:of )?{_YEAR})?"
)  # a bare "fall" is a verb
_STRICT = "|".join((
    r"\d{4}-\d{2}-\d{2}",
    rf"{_ORD} (?:of )?{_MON}(?:,? {_YEAR})?",
    rf"{_MON},? {_YEAR}",
    rf"{_MON} {_ORD}(?:,? {_YEAR})?",
    rf"q[1-4](?:,? (?:of )?{_YEAR})?",
    _SEASON,
    r"yesterday|today",
    r"(?:last|this|previous) (?:week|month|year)",
    r"(?:last|this|past|previous) weekend",
    rf"(?:last |this )?{_WD}",
    rf"(?:last|this) {_MON_FULL}",
    _YEAR,
))  # fmt: skip
_ATOM = rf"(?<![\w-])(?:{_STRICT}|{_MON_FULL})(?![\w-])"  # after a preposition a bare month is a date
_STRICT_RE = re.compile(rf"(?<![\w-])(?:{_STRICT})(?![\w-])")
_BARE_MONTH_RE = re.compile(rf"\b(?:in|during|of|for|throughout|early|late|mid-?) ?({_MON_FULL})\b")
_ANCHOR = (
    r"(?:i|we|you|he|she|they|(?:my|our|the) \w+) (?:\w+ed|went|left|came|began|got|met|took|quit|became|"
    r"was|were|had)"
)  # "I moved", "my sister left": an event we cannot date

_ROLLING_RE = re.compile(rf"\b(?:the )?(?:past|last) ({_NUM}) ({_UNIT})\b|\bthe (?:past|last) (day|week|month|year)\b")
_AGO_RE = re.compile(rf"\b({_NUM}) ({_UNIT}) ago\b")
_EARLIER_RE = re.compile(r"\bearlier this (year|month|week)\b")
_BETWEEN_RE = re.compile(rf"\b(?:between ({_ATOM}) and|from ({_ATOM}) (?:to|until|till|through)) ({_ATOM})")
_SINCE_RE = re.compile(rf"\bsince ({_ATOM})")
_BOUND_RE = re.compile(rf"\b(before|after|until|till|by) ({_ATOM})")
_AS_OF_RE = re.compile(rf"\bas of ({_ATOM})")
_EDGE_RE = re.compile(rf"\bat the (start|beginning|end) of ({_ATOM})")
# A part of a period: "the last week of October 2023", "the first two weeks of May", "the second weekend of June",
# "the first half of 2024", "the last 3 days of March".
_PART_RE = re.compile(
    rf"\bthe (first|second|third|fourth|last|final) (?:({_NUM}) )?(weeks?|weekends?|days?|half) of ({_ATOM})"
)
# A phase of a period, its first, middle or last third: "early 2023", "mid-August", "late May 2024", "in the
# beginning of January", "towards the end of summer 2023" ("at the start/end of X" is a moment: ``_EDGE_RE``).
_PHASE_RE = re.compile(
    rf"\b(?:the (beginning|start|middle|end) of |(early|mid|late)[- ])((?:{_STRICT}|{_MON_FULL})(?![\w-]))"
)
_ANCHOR_RE = re.compile(rf"\b(before|after|since) ({_ANCHOR})\b")

_EVOLUTION = re.compile(
    r"\bhow (?:[\w']+ ){0,5}(?:changed?|evolved?|developed?|shifted)\b|\bhas (?:[\w']+ ){0,4}changed\b|\bhistory\b"
    r"|\bover (?:time|the years|the months)\b|\bevolution\b|\bused to\b.*?\b(?:and|but) now\b|\btimeline\b"
    r"|\ball the (?:places|jobs|companies|cities|versions|times)\b|\bbefore and after\b"
)
_CURRENT = re.compile(
    r"\b(?:right now|now|nowadays|currently|current|these days|at the moment|at present|still|latest|"
    r"most recent|today)\b"
    r"|\b(?:do|does|am|is|are) (?:i|you|we|he|she|they|\w+) (?:live|work|own|prefer|use|like|have|drive|earn)\b"
    r"|\b(?:where|what|who|which)(?:'s| is| are) (?:my|your|his|her|their|our)\b"
)
_STATE_BASE = ("live|work|own|prefer|use|have|like|love|hate|think|believe|drive|earn|weigh|know|want|need|be|"
               "stay|rent|study")  # fmt: skip
_DID_RE = re.compile(r"\bdid (?:the |my |our )?\w+ (\w+)")
_PROGRESSIVE_RE = re.compile(r"\b(?:was|were) (?:i|you|we|he|she|they|\w+) (\w+ing)\b")
_EVENT_RE = re.compile(
    r"\b(?:said|told|asked|bought|discussed|talked|spoke|went|met|ate|wrote|mentioned|happened|visited|"
    r"watched|learned|learnt|sent|made|spent|called|decided|planned|booked|paid|tried|finished|started|"
    r"saw|heard|fixed|built|shipped|deployed|agreed|done|stayed)\b"
)
# "stayed" is an event (a visit, a trip: "who stayed with me last weekend?"); "did I stay" and "was I staying"
# still ask for a state (_STATE_BASE).
_STATE_RE = re.compile(
    r"\b(?:lived|worked|owned|preferred|was|were|had|used|liked|loved|hated|thought|believed|drove|earned|"
    r"weighed|rented|studied|wanted|needed|knew)\b"
)


def _ms(dt: datetime) -> int:
    return (dt - _EPOCH) // _MS


def _day(y: int, m: int, d: int, tz: tzinfo) -> Period:
    start = datetime(y, m, d, tzinfo=tz)
    return start, start + _DAY


def _month(y: int, m: int, tz: tzinfo, n: int = 1) -> Period:
    def first(y: int, m: int) -> datetime:
        return datetime(y + (m - 1) // 12, (m - 1) % 12 + 1, 1, tzinfo=tz)

    return first(y, m), first(y, m + n)


def _year_of(m: int, now: datetime, skip_current: bool = False, months: int = 1) -> int:
    """The year of the most recent period starting in month ``m`` that started on or before ``now``."""
    y = now.year if m <= now.month else now.year - 1
    if skip_current and (y * 12 + m - 1) + months > now.year * 12 + now.month - 1:  # ``now`` is inside it
        y -= 1
    return y


def _week(d: date, tz: tzinfo) -> Period:
    monday = d - timedelta(days=d.weekday())
    start = datetime(monday.year, monday.month, monday.day, tzinfo=tz)
    return start, start + timedelta(days=7)


def _num(s: str) -> int:
    return int(s) if s.isdigit() else _NUMBERS[s]


def _explicit_year(s: str) -> int | None:
    m = re.search(rf"(?<![\w-])({_YEAR})(?![\w-])", s)
    return int(m.group(1)) if m else None


def _recent_day(mon: int, d: int, now: datetime, tz: tzinfo) -> Period | None:
    for y in range(now.year, now.year - 8, -1):
        try:
            span = _day(y, mon, d, tz)
        except ValueError:
            continue
        if span[0] <= now:
            return span
    return None


def _atom(s: str, now: datetime, tz: tzinfo) -> Period | None:
    """The period a single date phrase names, or None if it names no valid date."""
    s = s.replace(".", "").replace(",", "")
    year = _explicit_year(s)
    today = now.date()
    try:
        if m := re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", s):
            return _day(int(m[1]), int(m[2]), int(m[3]), tz)
        if m := re.fullmatch(rf"(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?([a-z]+)(?: {_YEAR})?", s) or re.fullmatch(
            rf"([a-z]+) (\d{{1,2}})(?:st|nd|rd|th)?(?: {_YEAR})?", s
        ):
            day_s, mon_s = (m[1], m[2]) if m[1].isdigit() else (m[2], m[1])
            mon, d = _MONTH_NO[mon_s], int(day_s)
            return _day(year, mon, d, tz) if year else _recent_day(mon, d, now, tz)
        if (m := re.fullmatch(rf"([a-z]+) {_YEAR}", s)) and m[1] in _MONTH_NO:
            return _month(year or now.year, _MONTH_NO[m[1]], tz)
        if m := re.fullmatch(r"q([1-4])(?: (?:of )?\d{4})?", s):
            mon = 3 * int(m[1]) - 2
            return _month(year or _year_of(mon, now), mon, tz, 3)
        if m := re.fullmatch(r"(?:(this|last|the) )?(summer|winter|spring|autumn|fall)(?: (?:of )?\d{4})?", s):
            mon = _SEASON_START[m[2]]
            if m[1] == "this" and not year:  # the one this year (a winter that began last December)
                year = now.year - 1 if mon == 12 and now.month <= 2 else now.year
            return _month(year or _year_of(mon, now, m[1] == "last", 3), mon, tz, 3)
        if s in ("today", "yesterday"):
            d0 = today - (_DAY if s == "yesterday" else timedelta())
            return _day(d0.year, d0.month, d0.day, tz)
        if m := re.fullmatch(r"(last|this|previous) (week|month|year)", s):
            back = 0 if m[1] == "this" else 1
            if m[2] == "week":
                return _week(today - timedelta(days=7 * back), tz)
            if m[2] == "month":
                return _month(now.year, now.month - back, tz)
            return _month(now.year - back, 1, tz, 12)
        if m := re.fullmatch(r"(last|this|past|previous) weekend", s):
            # Saturday 00:00 to Monday 00:00: "this weekend" is the current or coming one, the others
            # the most recent one that has ended (or, on a Sunday, the one before today's).
            sat = today - timedelta(days=(today.weekday() - 5) % 7)
            if m[1] != "this" and (today - sat).days < 2:
                sat -= timedelta(days=7)
            if m[1] == "this" and today.weekday() < 5:
                sat = today + timedelta(days=5 - today.weekday())
            start = datetime(sat.year, sat.month, sat.day, tzinfo=tz)
            return start, start + 2 * _DAY
        if m := re.fullmatch(rf"(?:(last|this) )?({_WD})", s):
            wd = _WEEKDAYS.index(m[2])
            if m[1] == "this":
                target = today - timedelta(days=today.weekday() - wd)
            else:
                back = (today.weekday() - wd) % 7
                target = today - timedelta(days=back or (7 if m[1] == "last" else 0))
            return _day(target.year, target.month, target.day, tz)
        if m := re.fullmatch(rf"(?:(last|this) )?({_MON_FULL})", s):
            mon = _MONTH_NO[m[2]]
            return _month(_year_of(mon, now, m[1] == "last"), mon, tz)
        if year is not None and re.fullmatch(r"\d{4}", s):
            return _month(year, 1, tz, 12)
    except (ValueError, KeyError):
        return None
    return None


@dataclass(frozen=True)
class _Found:
    span: Span
    phrase: str
    point: bool = False  # "as of", "at the start of": a moment whatever the verb
    anchor: str | None = None


def _find_span(q: str, now: datetime, tz: tzinfo) -> _Found | None:
    until_now = now + _MS  # exclusive end that makes ``asked_at`` the last included ms
    if m := _BETWEEN_RE.search(q):
        b = _atom(m[3], now, tz)
        a_s = m[1] or m[2]
        a = _atom(a_s, now, tz)
        if a and b and a[0] >= b[1] and _explicit_year(a_s) is None:
            a = _atom(a_s, b[1] - _MS, tz)  # "between November and February": the November before
        if a and b:
            return _Found((a[0], b[1]), m[0])
    if m := _EDGE_RE.search(q):
        p = _atom(m[2], now, tz)
        if p:
            edge = (p[0], p[0] + _DAY) if m[1] != "end" else (p[1] - _DAY, p[1])
            return _Found(edge, m[0], point=True)
    if m := _PART_RE.search(q):
        p = _atom(m[4], now, tz)
        part = p and periods.part(p, m[1], _num(m[2]) if m[2] else 1, m[3].rstrip("s"))
        if part:
            return _Found(part, m[0])
    if m := _PHASE_RE.search(q):
        p = _atom(m[3], now, tz)
        if p:
            return _Found(periods.phase(p, m[1] or m[2]), m[0])
    if m := _AS_OF_RE.search(q):
        p = _atom(m[1], now, tz)
        if p:
            return _Found(p, m[0], point=True)
    if m := _SINCE_RE.search(q):
        p = _atom(m[1], now, tz)
        if p:
            return _Found((p[0], until_now), m[0])
    if m := _BOUND_RE.search(q):
        p = _atom(m[2], now, tz)
        if p:
            span = (None, p[0]) if m[1] == "before" else (p[1], None) if m[1] == "after" else (None, p[1])
            return _Found(span, m[0])
    if m := _ANCHOR_RE.search(q):
        end = until_now if m[1] == "since" else None
        return _Found((None, end), m[0], anchor=m[2])
    if m := _ROLLING_RE.search(q):
        n, unit = (_num(m[1]), m[2]) if m[1] else (1, m[3])
        unit = unit.rstrip("s")
        if unit in ("day", "week"):
            start = now - timedelta(days=n * (7 if unit == "week" else 1))
        else:
            start = periods.shift_months(now, n * (12 if unit == "year" else 1))
        return _Found((start, until_now), m[0])
    if m := _AGO_RE.search(q):
        n, unit = _num(m[1]), m[2].rstrip("s")
        if unit == "day":
            d0 = now.date() - timedelta(days=n)
            return _Found(_day(d0.year, d0.month, d0.day, tz), m[0])
        if unit == "week":
            return _Found(_week(now.date() - timedelta(days=7 * n), tz), m[0])
        if unit == "month":
            return _Found(_month(now.year, now.month - n, tz), m[0])
        return _Found(_month(now.year - n, 1, tz, 12), m[0])
    if m := _EARLIER_RE.search(q):
        if m[1] == "week":
            start = _week(now.date(), tz)[0]
        else:
            start = _month(now.year, now.month if m[1] == "month" else 1, tz)[0]
        return _Found((start, until_now), m[0])
    for rx, group in ((_STRICT_RE, 0), (_BARE_MONTH_RE, 1)):
        for m in rx.finditer(q):
            p = _atom(m[group], now, tz)
            if p:
                return _Found(p, m[0])
    return None


def _verb_class(q: str) -> tuple[Literal["event", "state"] | None, str | None]:
    if m := _DID_RE.search(q):
        return ("state" if re.fullmatch(_STATE_BASE, m[1]) else "event"), m[0]
    if m := _PROGRESSIVE_RE.search(q):
        stem = m[1][:-3]
        state = re.fullmatch(_STATE_BASE, stem) or re.fullmatch(_STATE_BASE, stem + "e")
        return ("state" if state else "event"), m[0]
    if m := _EVENT_RE.search(q):
        return "event", m[0]
    if m := _STATE_RE.search(q):
        return "state", m[0]
    return None, None


def _normalize(query: str) -> str:
    return " ".join(query.lower().replace("’", "'").replace("?", " ").replace("!", " ").split())


def parse_temporal(query: str, asked_at_ms: int, tz: tzinfo = UTC) -> TemporalIntent:
    q = _normalize(query)
    now = (_EPOCH + asked_at_ms * _MS).astimezone(tz)
    found = _find_span(q, now, tz)
    start_ms = end_ms = None
    if found is not None:
        start_ms = None if found.span[0] is None else _ms(found.span[0])
        end_ms = None if found.span[1] is None else _ms(found.span[1]) - 1
    date_cues = (found.phrase,) if found else ()
    anchor = found.anchor if found else None

    evo = [m[0] for m in _EVOLUTION.finditer(q)]
    if evo:
        return TemporalIntent("EVOLUTION", start_ms, end_ms, (*evo, *date_cues), anchor)
    verb, verb_cue = _verb_class(q)
    if found is not None and not (found.phrase == "today" and verb != "event"):
        verb_cues = (verb_cue,) if verb_cue else ()
        if found.point or (verb == "state"):
            return TemporalIntent("POINT_IN_TIME", start_ms, end_ms, (*date_cues, *verb_cues), anchor, verb_cue)
        return TemporalIntent("WINDOW", start_ms, end_ms, (*date_cues, *verb_cues), anchor, verb_cue)
    cur = [m[0] for m in _CURRENT.finditer(q)]
    if cur:
        return TemporalIntent("CURRENT", cues=tuple(cur))
    return TemporalIntent("UNSPECIFIED")
