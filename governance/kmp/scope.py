"""Read scopes: which abouts a read may look at, and the key that keeps dimensions of abouts apart.

* ``CURRENT_ABOUT`` — the one about of the request (``about``); refused ``ABOUT_REQUIRED`` without it.
* ``ABOUTS`` — an explicit list (``abouts``), deduplicated keeping the caller's order, at most
  ``max_abouts`` distinct ones; refused ``ABOUTS_REQUIRED`` when missing or empty, ``TOO_MANY_ABOUTS``
  beyond the cap. ``about`` is ignored (it may be the request's current about).
* ``ALL_ABOUTS`` — every about *of the caller's tenant* (``abouts`` None, ``is_global`` True). It never
  crosses tenants: the tenant comes from the bearer token and row-level security, not from the scope.

Decisions (beyond the brief):

* Modes are the exact upper-case words; anything else is ``INVALID_SCOPE``.
* A list of abouts given with ``CURRENT_ABOUT`` or ``ALL_ABOUTS`` is ``INVALID_SCOPE`` (the caller
  meant something we would silently drop); an empty list counts as not given.
* A blank about id (empty or whitespace) is ``INVALID_SCOPE`` in a list, ``ABOUT_REQUIRED`` alone.
* ``dimension_key`` refuses an about containing ``:dimension`` and blank ids, so that the key is
  injective: ``about:A:dimension:D`` is then split unambiguously at the first ``:dimension``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

ScopeMode = Literal["CURRENT_ABOUT", "ABOUTS", "ALL_ABOUTS"]
SCOPE_MODES: frozenset[str] = frozenset(get_args(ScopeMode))
MAX_ABOUTS = 100


class ScopeError(ValueError):
    """A scope the API refuses (400), with a stable code."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


@dataclass(frozen=True)
class ResolvedScope:
    mode: ScopeMode
    abouts: tuple[str, ...] | None  # None: every about of the caller's tenant
    is_global: bool


def resolve_scope(
    mode: str, about: str | None, abouts: Sequence[str] | None, max_abouts: int = MAX_ABOUTS
) -> ResolvedScope:
    """The abouts a read covers, or a ``ScopeError`` saying why the request is refused."""
    if max_abouts < 1:
        raise ValueError(f"max_abouts must be >= 1, got {max_abouts}")
    if isinstance(abouts, str):  # a bare string is a Sequence[str]; never split it into characters
        raise ScopeError("INVALID_SCOPE", "abouts must be a list of about ids, not a string")
    listed = list(abouts or ())
    if mode == "CURRENT_ABOUT":
        if listed:
            raise ScopeError("INVALID_SCOPE", "abouts is only for scope ABOUTS")
        if about is None or not about.strip():
            raise ScopeError("ABOUT_REQUIRED", "scope CURRENT_ABOUT needs an about")
        return ResolvedScope("CURRENT_ABOUT", (about,), False)
    if mode == "ABOUTS":
        if not listed:
            raise ScopeError("ABOUTS_REQUIRED", "scope ABOUTS needs a non-empty list of abouts")
        if any(not a.strip() for a in listed):
            raise ScopeError("INVALID_SCOPE", "an about id is blank")
        unique = tuple(dict.fromkeys(listed))
        if len(unique) > max_abouts:
            raise ScopeError("TOO_MANY_ABOUTS", f"{len(unique)} abouts, at most {max_abouts}")
        return ResolvedScope("ABOUTS", unique, False)
    if mode == "ALL_ABOUTS":
        if listed:
            raise ScopeError("INVALID_SCOPE", "abouts is only for scope ABOUTS")
        return ResolvedScope("ALL_ABOUTS", None, True)
    raise ScopeError("INVALID_SCOPE", f"unknown scope {mode!r}, expected one of {sorted(SCOPE_MODES)}")


_DIMENSION_SEP = ":dimension"


def dimension_key(about: str, dimension_id: str) -> str:
    """The key of a dimension inside its about: two abouts with the same ``session:1`` never mix."""
    if not about.strip():
        raise ScopeError("INVALID_ABOUT", "about is blank")
    if _DIMENSION_SEP in about:
        raise ScopeError("INVALID_ABOUT", f"an about id may not contain {_DIMENSION_SEP!r}")
    if not dimension_id.strip():
        raise ScopeError("INVALID_DIMENSION", "dimension id is blank")
    return f"about:{about}:dimension:{dimension_id}"
