"""Date mentions in episode text, normalised against the episode's event time (``occurred_at_ms``).

``find_date(text, ref_ms)`` returns the first date mention in ``text`` as an ISO-style string whose
precision follows the mention: a day ``2026-03-03`` ("yesterday", "on 3 March 2026", "last Monday",
"2 days ago"), an ISO week ``2026-W09`` ("last week", "a week ago"), a month ``2025-03`` ("last March",
"in March 2025", "a month ago"), or a year ``2024`` ("in 2024", "last year"). ``None`` when there is none.

Decisions: all dates are UTC calendar dates of ``ref_ms``. A month without a year ("in March", "last
March") is the most recent such month not after the reference month, except that "last <month>" in that
same month means the year before (said in March 2026, "last March" is 2025-03). A weekday ("on Monday",
"last Monday") is the most recent such day strictly before the reference day. "Month D" without a year
is the most recent such day not after the reference day. Deterministic; no locale.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")  # fmt: skip
_MONTH_NO = {m: i + 1 for i, m in enumerate(_MONTHS)} | {m[:3]: i + 1 for i, m in enumerate(_MONTHS)} | {"sept": 9}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}  # fmt: skip
_MON = r"(?:" + "|".join(_MONTHS) + r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
_WD = "(?:" + "|".join(_WEEKDAYS) + ")"
_YEAR = r"(?:19|20)\d{2}"
_NUM = r"(?:\d{1,3}|" + "|".join(_NUMBERS) + ")"

_DATE_RE = re.compile(
    "|".join(
        (
            r"(?P<iso>\b\d{4}-\d{2}-\d{2}\b)",
            rf"(?P<dmy>\b(?P<dmy_d>\d{{1,2}})(?:st|nd|rd|th)?(?: of)? (?P<dmy_m>{_MON}),? (?P<dmy_y>{_YEAR})\b)",
            rf"(?P<mdy>\b(?P<mdy_m>{_MON}) (?P<mdy_d>\d{{1,2}})(?:st|nd|rd|th)?,? (?P<mdy_y>{_YEAR})\b)",
            rf"(?P<my>\b(?P<my_m>{_MON}),? (?P<my_y>{_YEAR})\b)",
            rf"(?P<md>\b(?P<md_m>{_MON}) (?P<md_d>\d{{1,2}})(?:st|nd|rd|th)?\b)",
            rf"(?P<dm>\b(?P<dm_d>\d{{1,2}})(?:st|nd|rd|th)?(?: of)? (?P<dm_m>{_MON})\b)",
            r"(?P<rel_day>\b(?:the day before yesterday|yesterday|today|tonight|this morning|this afternoon|"
            r"this evening|last night)\b)",
            rf"(?P<ago>\b(?P<ago_n>{_NUM}) (?P<ago_u>day|week|month|year)s? ago\b)",
            r"(?P<rel_unit>\b(?P<rel_w>last|this|past) (?P<rel_u>week|month|year)\b)",
            rf"(?P<last_month>\blast (?P<lm_m>{_MON})(?! \d))",
            rf"(?P<wd>\b(?:last|on|this past) (?P<wd_d>{_WD})\b)",
            rf"(?P<in_month>\b(?:in|during|since|early|late|mid-?) (?P<im_m>{_MON})(?! \d)\b)",
            rf"(?P<year>\b(?:in|since|during|of|by) (?P<year_y>{_YEAR})\b)",
        )
    ),
    re.IGNORECASE,
)


def ref_date(ref_ms: int) -> date:
    return datetime.fromtimestamp(ref_ms / 1000, UTC).date()


def episode_date(ref_ms: int) -> str:
    """The episode's UTC calendar day, ``YYYY-MM-DD`` (the prefix of summary sentences)."""
    return ref_date(ref_ms).isoformat()


def _month_no(word: str) -> int:
    return _MONTH_NO[word.lower().rstrip(".")]


def _num(word: str) -> int:
    w = word.lower()
    return int(w) if w.isdigit() else _NUMBERS[w]


def _week(d: date) -> str:
    y, w, _ = d.isocalendar()
    return f"{y}-W{w:02d}"


def _month_back(d: date, months: int) -> tuple[int, int]:
    n = d.year * 12 + (d.month - 1) - months
    return n // 12, n % 12 + 1


def _safe_day(y: int, m: int, d: int) -> date | None:
    try:
        return date(y, m, d)
    except ValueError:
        return None


def _normalise(m: re.Match[str], ref: date) -> str | None:
    g = m.group
    if g("iso"):
        day = _safe_day(*(int(p) for p in g("iso").split("-")))
        return day.isoformat() if day else None
    if g("dmy") or g("mdy"):
        p = "dmy" if g("dmy") else "mdy"
        day = _safe_day(int(g(f"{p}_y")), _month_no(g(f"{p}_m")), int(g(f"{p}_d")))
        return day.isoformat() if day else None
    if g("my"):
        return f"{int(g('my_y')):04d}-{_month_no(g('my_m')):02d}"
    if g("md") or g("dm"):
        p = "md" if g("md") else "dm"
        month, dd = _month_no(g(f"{p}_m")), int(g(f"{p}_d"))
        day = _safe_day(ref.year, month, dd)
        if day is not None and day > ref:
            day = _safe_day(ref.year - 1, month, dd)
        return day.isoformat() if day else None
    if g("rel_day"):
        word = g("rel_day").lower()
        back = 2 if word.startswith("the day before") else 1 if word in ("yesterday", "last night") else 0
        return (ref - timedelta(days=back)).isoformat()
    if g("ago"):
        n, unit = _num(g("ago_n")), g("ago_u").lower()
        if unit == "day":
            return (ref - timedelta(days=n)).isoformat()
        if unit == "week":
            return _week(ref - timedelta(weeks=n))
        if unit == "month":
            y, mo = _month_back(ref, n)
            return f"{y:04d}-{mo:02d}"
        return f"{ref.year - n:04d}"
    if g("rel_unit"):
        back = 0 if g("rel_w").lower() == "this" else 1
        unit = g("rel_u").lower()
        if unit == "week":
            return _week(ref - timedelta(weeks=back))
        if unit == "month":
            y, mo = _month_back(ref, back)
            return f"{y:04d}-{mo:02d}"
        return f"{ref.year - back:04d}"
    if g("last_month") or g("in_month"):
        month = _month_no(g("lm_m") if g("last_month") else g("im_m"))
        strict = bool(g("last_month"))
        year = ref.year if (month < ref.month or (month == ref.month and not strict)) else ref.year - 1
        return f"{year:04d}-{month:02d}"
    if g("wd"):
        target = _WEEKDAYS.index(g("wd_d").lower())
        back = (ref.weekday() - target) % 7 or 7
        return (ref - timedelta(days=back)).isoformat()
    if g("year"):
        return g("year_y")
    return None


def find_date(text: str, ref_ms: int) -> str | None:
    """The first date mention in ``text``, normalised relative to ``ref_ms`` (see the module doc)."""
    ref = ref_date(ref_ms)
    for m in _DATE_RE.finditer(text):
        out = _normalise(m, ref)
        if out is not None:
            return out
    return None


def has_date(text: str) -> bool:
    return _DATE_RE.search(text) is not None
