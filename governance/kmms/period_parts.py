"""Parts of a period, for the temporal intent's reading of a question (``governance.kmms.temporal``): "the last
week of October", "the first two weeks of May", "the second weekend of June", "the first half of 2024" (``part``),
and a period's thirds for "early", "mid-" and "late" (``phase``). Periods are ``[start, end)`` pairs of aware
datetimes. Pure.
"""

from __future__ import annotations

import calendar
import itertools
from datetime import datetime, timedelta

Period = tuple[datetime, datetime]  # [start, end), end exclusive
_DAY = timedelta(days=1)
_ORDINAL = {"first": 1, "second": 2, "third": 3, "fourth": 4}


def shift_months(dt: datetime, n: int) -> datetime:
    """``dt`` moved ``n`` months back (forward when ``n`` < 0), its day clipped to the month's last."""
    y, m0 = divmod(dt.year * 12 + dt.month - 1 - n, 12)
    return dt.replace(year=y, month=m0 + 1, day=min(dt.day, calendar.monthrange(y, m0 + 1)[1]))


def part(p: Period, which: str, n: int, unit: str) -> Period | None:
    """The part of period ``p`` a question names: the ``which`` (first ... fourth, last) ``n`` weeks, weekends,
    days or half of it, clipped to it; None when the part is not inside it."""
    start, end = p
    if unit == "half":
        halves = split(p, 2)
        return halves[0] if which == "first" else halves[1] if which in ("second", "last", "final") else None
    i = _ORDINAL.get(which)
    if unit == "weekend":  # Saturday and Sunday; a period's last weekend may end after it
        last_day = end - _DAY
        first_sat = start + timedelta(days=(5 - start.weekday()) % 7)
        last_sat = last_day - timedelta(days=(last_day.weekday() - 5) % 7)
        sat = first_sat + timedelta(days=7 * (i - 1)) if i else last_sat - timedelta(days=7 * (n - 1))
        return (sat, sat + timedelta(days=7 * (n - 1) + 2)) if start <= sat < end else None
    size = timedelta(days=n * (7 if unit == "week" else 1))
    first = start + timedelta(days=7 * (i - 1) if unit == "week" else i - 1) if i else end - size
    clipped = (max(first, start), min(first + size, end))
    return clipped if clipped[0] < clipped[1] else None


def split(p: Period, parts: int) -> list[Period]:
    """Period ``p`` in ``parts`` consecutive parts: whole months when it is whole months that many divide (a year's
    thirds are January-April, May-August, September-December), else whole days, rounded."""
    start, end = p
    months = (end.year - start.year) * 12 + end.month - start.month
    if start.day == end.day == 1 and start.time() == end.time() and months % parts == 0:
        cuts = [start, *(shift_months(start, -(months // parts) * i) for i in range(1, parts)), end]
    else:
        days = (end - start).days
        cuts = [start, *(start + timedelta(days=round(days * i / parts)) for i in range(1, parts)), end]
    return list(itertools.pairwise(cuts))


def phase(p: Period, which: str) -> Period:
    """A third of period ``p`` (``split``; a period shorter than three days whole): its first for "beginning",
    "start", "early", its middle for "middle", "mid", its last for "end", "late"."""
    if (p[1] - p[0]).days < 3:
        return p
    first, middle, last = split(p, 3)
    return first if which in ("beginning", "start", "early") else middle if which in ("middle", "mid") else last
