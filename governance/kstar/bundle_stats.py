"""What an export takes and what a bundle says about itself (seed §5.1, §5.2): the time a record is dated by,
the export filter, and the statistics block.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from governance.kstar.bundle_format import COUNT_FIELD, KINDS, TOKENS, BundleError, parse_time

_DATE_ONLY_RE = re.compile(r"\d{4}-\d{2}-\d{2}")


def record_time(kind: str, record: Mapping[str, Any]) -> str | None:
    """The time a record is dated by for date filters and ``date_range``; None when it has none."""
    if kind == "traces":
        value = record.get("timestamp")
    elif kind in ("perceptions", "facts"):
        value = record.get("created_at")
    elif kind == "skills":
        maturity = record.get("maturity")
        value = maturity.get("last_used") if isinstance(maturity, Mapping) else None
    elif kind == TOKENS:
        value = record.get("granted_at")
    else:
        raise ValueError(f"unknown memory kind {kind!r}")
    if value is None or isinstance(value, str):
        return value
    raise BundleError("BUNDLE_BAD_FORMAT", f"{kind} record time is not a string")


@dataclass(frozen=True)
class ExportFilter:
    """What an export takes (seed §5.2): memory types, control tokens only on request, an inclusive date range.

    ``include_tokens`` is the only way tokens get in (the seed's explicit ``--include-tokens``), whatever ``types``
    says. A date-only ``date_to`` covers that whole day. Records without a time (a never-used skill) are kept."""

    types: frozenset[str] = frozenset(KINDS) - {TOKENS}
    include_tokens: bool = False
    date_from: str | None = None
    date_to: str | None = None
    _kinds: frozenset[str] = field(init=False, repr=False, compare=False)
    _lower: datetime | None = field(init=False, repr=False, compare=False)
    _upper: datetime | None = field(init=False, repr=False, compare=False)
    _upper_exclusive: bool = field(init=False, repr=False, compare=False)  # a date-only date_to: next midnight

    def __post_init__(self) -> None:
        unknown = set(self.types) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown memory types; known: {', '.join(KINDS)}")
        kinds = frozenset(self.types) - {TOKENS} | ({TOKENS} if self.include_tokens else set())
        lower = _parse_bound(self.date_from) if self.date_from is not None else None
        upper = _parse_bound(self.date_to) if self.date_to is not None else None
        exclusive = self.date_to is not None and _DATE_ONLY_RE.fullmatch(self.date_to) is not None
        if upper is not None and exclusive:
            upper += timedelta(days=1)
        if lower is not None and upper is not None and lower > upper:
            raise ValueError("from is after to")
        object.__setattr__(self, "_kinds", kinds)
        object.__setattr__(self, "_lower", lower)
        object.__setattr__(self, "_upper", upper)
        object.__setattr__(self, "_upper_exclusive", exclusive)

    @property
    def kinds(self) -> frozenset[str]:
        """The memory sections this filter admits at all."""
        return self._kinds

    def admits(self, kind: str, record: Mapping[str, Any]) -> bool:
        if kind not in self._kinds:
            return False
        if self._lower is None and self._upper is None:
            return True
        stamp = record_time(kind, record)
        if stamp is None:
            return True
        when = parse_time(stamp)
        if self._lower is not None and when < self._lower:
            return False
        if self._upper is None:
            return True
        return when < self._upper if self._upper_exclusive else when <= self._upper

    def apply(self, memory: Mapping[str, Iterable[Mapping[str, Any]]]) -> dict[str, list[Mapping[str, Any]]]:
        """The admitted records of ``memory``, every kind present (empty when filtered out)."""
        return {kind: [record for record in memory.get(kind, ()) if self.admits(kind, record)] for kind in KINDS}


def _parse_bound(value: str) -> datetime:
    try:
        return parse_time(value)
    except BundleError:
        raise ValueError("not an ISO-8601 date or time") from None


# ---------------------------------------------------------------------------------------------- statistics


def date_range(stamps: Iterable[str]) -> dict[str, str | None]:
    # Compared as instants, not strings: "…00Z" and "…00.5Z" sort the wrong way round as text. Ties between two
    # spellings of one instant go to the smaller string so the result never depends on record order.
    timed = [(parse_time(stamp), stamp) for stamp in stamps]
    if not timed:
        return {"earliest": None, "latest": None}
    first, last = min(when for when, _ in timed), max(when for when, _ in timed)
    return {
        "earliest": min(stamp for when, stamp in timed if when == first),
        "latest": min(stamp for when, stamp in timed if when == last),
    }


def record_stamps(memory: Mapping[str, Sequence[Mapping[str, Any]]], kinds: Iterable[str]) -> list[str]:
    return [
        stamp for kind in kinds for record in memory.get(kind, ()) if (stamp := record_time(kind, record)) is not None
    ]


def statistics(memory: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Seed §5.1 statistics of ``memory``, plus ``token_count``.

    ``date_range`` spans the time of every record in the bundle (``record_time``): the seed does not say which
    times it covers, and the export's date filter is applied to those same times."""
    stats: dict[str, Any] = {COUNT_FIELD[kind]: len(memory.get(kind, ())) for kind in KINDS}
    stats["date_range"] = date_range(record_stamps(memory, KINDS))
    return stats
