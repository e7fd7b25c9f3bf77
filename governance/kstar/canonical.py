"""RFC 8785 canonical JSON for KSTAR bundles (X-21): the bytes a checksum is taken over and a file holds, fast
for 100k records, and the parser that tells whether parsed JSON can skip the canonicalising walk.
"""

from __future__ import annotations

import gc
import hashlib
import json
import math
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import rfc8785

from governance.kstar.bundle_format import BundleError

_SAFE_INT = 2**53 - 1  # RFC 8785 / I-JSON: integers beyond this are not exact in an IEEE double

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abAB]")
_ASTRAL_LEADS = (b"\xf0", b"\xf1", b"\xf2", b"\xf3", b"\xf4")


class _Slow(Exception):
    """Raised inside the fast path when the C encoder's bytes could differ from RFC 8785's."""


_ENCODER = json.JSONEncoder(
    ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False, check_circular=False
)


@contextmanager
def gc_paused() -> Iterator[None]:
    # Parsing or walking 100k records allocates millions of containers and no cycles; the cyclic collector would
    # rescan the growing heap again and again (3-4x slower). Collection is only deferred, never skipped.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def canonical_json(value: Any) -> bytes:
    """RFC 8785 bytes of ``value``: byte-identical to ``rfc8785.dumps`` wherever it gives bytes (mappings and tuples
    taken as objects and arrays); also ints beyond 2**53 already spelled as RFC 8785 prints their double.
    ``BundleError(BUNDLE_BAD_FORMAT)`` if the value has no canonical form (NaN, 2**53+1, non-string key)."""
    # rfc8785 is pure Python (~10 s for 100k traces). The C encoder gives the same bytes whenever every key sorts
    # the same by code point as by UTF-16 unit, every int is safe and every float prints the same in Python and
    # ECMAScript; _plain checks that in one walk and hands anything else, subtree by subtree, to rfc8785.
    return canonical(value, exact=False)


def canonical(value: Any, exact: bool) -> bytes:
    """``exact``: the caller knows ``value`` needs no walk (parsed JSON that parse_json found plain)."""
    try:
        with gc_paused():
            return _ENCODER.encode(value if exact else _plain(value)).encode("utf-8")
    except (_Slow, UnicodeEncodeError):
        return _canonical_slow(value)
    except RecursionError:
        raise BundleError("BUNDLE_BAD_FORMAT", "JSON nested too deeply (or circular)") from None


def _canonical_slow(value: Any) -> bytes:
    if isinstance(value, Mapping):
        if not all(isinstance(key, str) for key in value):
            raise BundleError("BUNDLE_BAD_FORMAT", "object keys must be strings")
        # RFC 8785 §3.2.3: members sorted by the UTF-16 code units of their names.
        keys = sorted(value, key=lambda key: key.encode("utf-16-be", "surrogatepass"))
        return b"{" + b",".join(canonical_json(key) + b":" + canonical_json(value[key]) for key in keys) + b"}"
    if isinstance(value, list | tuple):
        return b"[" + b",".join(canonical_json(item) for item in value) + b"]"
    if isinstance(value, int) and not isinstance(value, bool) and not -_SAFE_INT <= value <= _SAFE_INT:
        # JSON numbers are doubles, and RFC 8785 prints a big integral double as its shortest digits padded with
        # zeros, which a parser reads back as a big int. Such an int is canonical as it stands (so a bundle
        # re-verifies whatever parser loaded it); any other big int would read back changed, so it is refused.
        double = float(value) if abs(value) < 2**1023 else math.inf
        printed = rfc8785.dumps(double) if math.isfinite(double) else b""
        if printed.lstrip(b"-").isdigit() and int(printed) == value:
            return printed
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError:
        raise BundleError("BUNDLE_BAD_FORMAT", "not representable as canonical JSON") from None


def _plain(value: Any) -> Any:
    """``value`` itself when the C encoder prints it canonically, else a copy that it does (integral floats become
    ints; other mappings become dicts); raises _Slow where only rfc8785 knows the answer."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is dict:
        return _plain_dict(value)
    if kind is list or kind is tuple:
        return _plain_list(value)
    if kind is int:
        if -_SAFE_INT <= value <= _SAFE_INT:
            return value
        raise _Slow
    if kind is float:
        return _plain_float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return _plain(int(value))
    if isinstance(value, float):
        return _plain_float(float(value))
    if isinstance(value, Mapping):
        return _plain_dict(dict(value))
    if isinstance(value, list | tuple):
        return _plain_list(value)
    raise _Slow


def _plain_dict(value: dict[Any, Any]) -> dict[Any, Any]:
    try:
        keys = "".join(value)
    except TypeError:
        raise _Slow from None  # a non-string key: rfc8785 refuses it, json would quietly stringify it
    if not keys.isascii() and max(keys) > "\uffff":
        raise _Slow  # astral-plane keys sort differently by UTF-16 unit than by code point
    copy: dict[Any, Any] | None = None
    for key, item in value.items():
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int and -_SAFE_INT <= item <= _SAFE_INT:
            continue
        # Containers dispatched here, not via _plain: one call fewer per node over millions of nodes.
        plain = _plain_dict(item) if kind is dict else _plain_list(item) if kind is list else _plain(item)
        if plain is not item:
            if copy is None:
                copy = dict(value)
            copy[key] = plain
    return value if copy is None else copy


def _plain_list(value: list[Any] | tuple[Any, ...]) -> list[Any] | tuple[Any, ...]:
    copy: list[Any] | None = None
    for index, item in enumerate(value):
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int and -_SAFE_INT <= item <= _SAFE_INT:
            continue
        # Containers dispatched here, not via _plain: one call fewer per node over millions of nodes.
        plain = _plain_dict(item) if kind is dict else _plain_list(item) if kind is list else _plain(item)
        if plain is not item:
            if copy is None:
                copy = list(value)
            copy[index] = plain
    return value if copy is None else copy


def _plain_float(value: float) -> float | int:
    if not math.isfinite(value):
        raise _Slow
    if value.is_integer():
        # ECMAScript prints integral doubles without ".0"; below 2**53 that is exactly str(int(value)).
        if abs(value) <= _SAFE_INT:
            return int(value)
        raise _Slow
    if "e" in repr(value):
        raise _Slow  # exponent notation: Python and ECMAScript disagree on where and how
    return value


def join_members(members: Mapping[str, bytes]) -> bytes:
    """Canonical object from members already canonicalised, so the big ``memory`` member is serialised once."""
    keys = sorted(members, key=lambda key: key.encode("utf-16-be", "surrogatepass"))
    return b"{" + b",".join(canonical_json(key) + b":" + members[key] for key in keys) + b"}"


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def checksum(bundle: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``bundle`` without its ``integrity`` member (X-21)."""
    return checksum_of(bundle, exact=False)


def checksum_of(bundle: Mapping[str, Any], exact: bool) -> str:
    return sha256_digest(canonical({key: value for key, value in bundle.items() if key != "integrity"}, exact))


def dump_document(document: Mapping[str, Any]) -> bytes:
    """The bytes a bundle or envelope file holds: its canonical JSON."""
    return canonical_json(document)


class _NumberScan:
    """json.loads hooks noting whether any number would print differently in RFC 8785 than in Python."""

    __slots__ = ("exact",)

    def __init__(self) -> None:
        self.exact = True

    def parse_float(self, text: str) -> float:
        value = float(text)
        if not math.isfinite(value) or value.is_integer() or "e" in repr(value):
            self.exact = False
        return value

    def parse_int(self, text: str) -> int:
        if len(text) > 15:  # 10**15 < 2**53: shorter ones are safe without looking closer
            self.exact = False
        return int(text)

    @staticmethod
    def parse_constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")


def parse_json(data: bytes) -> tuple[dict[str, Any], bool]:
    """The document, and whether it can be canonicalised without the _plain walk: parsed JSON has only string keys
    and plain types, so what is left to rule out is odd numbers and astral characters (which might sit in keys)."""
    scan = _NumberScan()
    try:
        text = data.decode("utf-8")
        with gc_paused():
            document = json.loads(
                text, parse_float=scan.parse_float, parse_int=scan.parse_int, parse_constant=scan.parse_constant
            )
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise BundleError("BUNDLE_NOT_JSON", f"not a UTF-8 JSON document: {str(exc)[:200]}") from None
    if not isinstance(document, dict):
        raise BundleError("BUNDLE_BAD_FORMAT", "the document is not a JSON object")
    # Astral characters are 4-byte UTF-8 sequences, led by bytes F0-F4; a byte search is far cheaper than max(text).
    astral = any(lead in data for lead in _ASTRAL_LEADS)
    return document, scan.exact and not astral and _SURROGATE_ESCAPE.search(text) is None
