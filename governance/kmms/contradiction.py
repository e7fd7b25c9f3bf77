"""How a contradiction between a new fact and a stored one is resolved, by its class.

* temporal — the world changed ("I moved to Porto"): the new fact supersedes the old one, which stays
  as history (valid until now).
* contextual — both hold in different contexts ("tea at work, coffee at home"): they coexist.
* direct — the same thing stated two ways with no sign of change: a human or a later episode must
  decide, so it is flagged for review; unless the extractor says the new fact updates the existing
  one (``updates_existing``), which is the user correcting us, and then it supersedes.
"""

from __future__ import annotations

from governance.kmms.values import ContradictionClass, Resolution

_BY_CLASS: dict[str, Resolution] = {"temporal": "supersede", "contextual": "coexist", "direct": "flag_for_review"}


def resolve(cls: ContradictionClass, updates_existing: bool) -> Resolution:
    if cls == "direct" and updates_existing:
        return "supersede"
    try:
        return _BY_CLASS[cls]
    except KeyError:
        raise ValueError(f"unknown contradiction class {cls!r}") from None
