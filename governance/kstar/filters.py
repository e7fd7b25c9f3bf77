"""Query filters (seed 003 §8): validated conditions for the SQL side, and a pure evaluator with the same meaning.

``filters`` maps a dotted path to a value, e.g. ``{"situation.domain": "education.evaluation",
"result.success": True, "timestamp": {"gte": "2026-01-01", "lte": "2026-01-31"}}``:

* Paths: segments ``[A-Za-z_][A-Za-z0-9_]*``, at most 8, the first one of the caller's ``allowed_roots``.
* A dict value whose keys are all operators (``gte lte gt lt in contains``) gives one condition per operator; a
  dict without operator keys is equality with that object; mixing both is refused (a typo such as ``gtee`` would
  otherwise quietly turn a range into an equality). At most 16 conditions in all.
* ``eq``: any JSON value, JSON equality (``true`` is not ``1``). A missing field never matches; ``null`` matches
  a field that is present and null.
* ``gte lte gt lt``: a number or a string; a value only compares with one of its own JSON type (number with
  number, string with string — the SQL side must check ``jsonb_typeof`` too). A string that looks like an
  ISO-8601 time is normalised as stored times are (``records.normalise_time``: fixed width, so string order is
  time order); a bare date is a whole day: ``gte``/``lt`` take its start, ``lte``/``gt`` its last millisecond, so
  the seed's ``{"gte": "2026-01-01", "lte": "2026-01-31"}`` is all of January.
* ``in``: a non-empty list (≤ 256) of JSON scalars (string, number, boolean); equal to one of them.
* ``contains``: a JSON scalar; the field is an array holding an equal element (e.g. ``metadata.tags``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import BaseModel

from contracts.models import MAX_ITEMS
from governance.kstar.records import KstarRefusal, check_json, normalise_time

Op = Literal["eq", "gte", "lte", "gt", "lt", "in", "contains"]
OPERATORS: frozenset[str] = frozenset(get_args(Op)) - {"eq"}
MAX_CONDITIONS = 16
MAX_DEPTH = 8
_SEGMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_JSONPATH = re.compile(r"\$((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
_TIMELIKE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}.*)?", re.S)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Condition:
    """``doc #> path`` compared by ``op`` with ``value`` (already validated and, for ranges, normalised)."""

    path: tuple[str, ...]
    op: Op
    value: Any


def _bad(detail: str) -> KstarRefusal:
    return KstarRefusal("KSTAR_BAD_FILTER", detail)


def roots_of(model: type[BaseModel]) -> frozenset[str]:
    """A record model's top-level field names as stored (``schema``, not ``schema_name``)."""
    return frozenset(f.alias or name for name, f in model.model_fields.items())


def _path(key: Any, allowed_roots: frozenset[str]) -> tuple[str, ...]:
    if not isinstance(key, str):
        raise _bad("filter keys must be strings")
    path = tuple(key.split("."))
    if len(path) > MAX_DEPTH or not all(_SEGMENT.fullmatch(s) for s in path):
        raise _bad(f"{key[:100]!r}: a dotted path of at most {MAX_DEPTH} names [A-Za-z_][A-Za-z0-9_]*")
    if path[0] not in allowed_roots:
        raise _bad(f"{key[:100]!r}: filters start with one of {', '.join(sorted(allowed_roots))}")
    return path


def _is_scalar(v: Any) -> bool:
    return isinstance(v, str | int | float)  # bool is an int


def _range_value(key: str, op: str, v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, str | int | float):
        raise _bad(f"{key[:100]!r}: {op} takes a number or a string")
    if not isinstance(v, str) or not _TIMELIKE.fullmatch(v):
        return v
    if _DATE.fullmatch(v) and op in ("lte", "gt"):
        v += "T23:59:59.999"  # the whole day (times are stored to the millisecond)
    try:
        return normalise_time(v)
    except ValueError:
        raise _bad(f"{key[:100]!r}: {op} {v[:40]!r} is not an ISO-8601 time") from None


def _conditions(key: str, path: tuple[str, ...], value: Any) -> list[Condition]:
    if not (isinstance(value, dict) and value and set(value) & OPERATORS):
        return [Condition(path, "eq", value)]
    if not set(value) <= OPERATORS:
        raise _bad(f"{key[:100]!r}: mixes operators with other keys; operators are {', '.join(sorted(OPERATORS))}")
    out: list[Condition] = []
    for op, v in value.items():
        if op == "in":
            if not isinstance(v, list) or not v or len(v) > MAX_ITEMS or not all(_is_scalar(x) for x in v):
                raise _bad(f"{key[:100]!r}: in takes a non-empty list of at most {MAX_ITEMS} scalars")
        elif op == "contains":
            if not _is_scalar(v):
                raise _bad(f"{key[:100]!r}: contains takes a string, number or boolean")
        else:
            v = _range_value(key, op, v)
        out.append(Condition(path, op, v))
    return out


def parse_filters(filters: Mapping[str, Any], allowed_roots: frozenset[str]) -> list[Condition]:
    if not isinstance(filters, Mapping):
        raise _bad("filters must be an object")
    out: list[Condition] = []
    for key, value in filters.items():
        path = _path(key, allowed_roots)
        try:
            check_json(value)
        except ValueError as exc:
            raise _bad(f"{key[:100]!r}: {exc}") from None
        out += _conditions(key, path, value)
        if len(out) > MAX_CONDITIONS:
            raise _bad(f"at most {MAX_CONDITIONS} conditions")
    return out


# ---------------------------------------------------------------------------------------------- evaluation

_MISSING = object()


def _get(doc: Any, path: Sequence[str]) -> Any:
    for seg in path:
        if not isinstance(doc, Mapping) or seg not in doc:
            return _MISSING
        doc = doc[seg]
    return doc


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON has it: ``true`` is not ``1``; ``1`` is ``1.0``."""
    if _number(a) and _number(b):
        return bool(a == b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and not isinstance(a, dict | list) and bool(a == b)


def _holds(field: Any, c: Condition) -> bool:
    if field is _MISSING:
        return False
    if c.op == "eq":
        return json_equal(field, c.value)
    if c.op == "in":
        return any(json_equal(field, v) for v in c.value)
    if c.op == "contains":
        return isinstance(field, list) and any(json_equal(x, c.value) for x in field)
    if not ((_number(field) and _number(c.value)) or (isinstance(field, str) and isinstance(c.value, str))):
        return False
    if c.op == "gte":
        return bool(field >= c.value)
    if c.op == "lte":
        return bool(field <= c.value)
    if c.op == "gt":
        return bool(field > c.value)
    return bool(field < c.value)


def matches(doc: Mapping[str, Any], conds: Sequence[Condition]) -> bool:
    """Does ``doc`` meet every condition?"""
    return all(_holds(_get(doc, c.path), c) for c in conds)


def parse_jsonpath(path: str) -> tuple[str, ...]:
    """The JSONPath subset of §8.3: ``$`` then ``.name`` segments (1 to 8); the names, relative to the fact's data."""
    m = _JSONPATH.fullmatch(path) if isinstance(path, str) else None
    if m is None or m.group(1).count(".") > MAX_DEPTH:
        raise KstarRefusal("KSTAR_BAD_JSONPATH", f"a path like $.learning_style: '$' then 1 to {MAX_DEPTH} "
                           "'.name' segments")  # fmt: skip
    return tuple(m.group(1)[1:].split("."))


def parse_order(order_by: str, allowed: frozenset[str]) -> tuple[str, bool]:
    """``"-confidence"`` -> ``("confidence", True)`` (descending); ``"confidence"``/``"+confidence"`` ascend."""
    if not isinstance(order_by, str):
        raise _bad("order_by must be a string")
    descending = order_by.startswith("-")
    name = order_by[1:] if order_by[:1] in "+-" and order_by else order_by
    if name not in allowed:
        raise _bad(f"order_by {order_by[:100]!r}: one of {', '.join(sorted(allowed))}, '-' first to descend")
    return name, descending
