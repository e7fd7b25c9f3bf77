"""The pure part of the hub: which dashboard areas a changed table feeds, and the burst throttle.

No I/O here, so the rules are unit-tested without a database (tests/unit/test_dashboard_hub.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

# Changed table -> the areas whose snapshot it changes; the page hands area "clam" to renderClamGraph.
TABLE_AREAS: dict[str, tuple[str, ...]] = {
    "audit.events": ("flow",),
    "claws.claws": ("claws", "graph"),
    "governance.proposals": ("proposals", "graph"),
    "governance.votes": ("proposals", "graph"),
    "governance.decisions": ("proposals", "graph"),
    "governance.refusals": ("proposals",),
    "governance.facts": ("facts", "proposals", "graph"),
    "caml.caml_reputation": ("reputation",),
    "caml.caml_rep_events": ("reputation",),
    "caml.caml_observations": ("observations",),
    "kmms.kmms_nodes": ("kmms", "graph"),
    "kmms.kmms_episodes": ("kmms",),
    "clam.stm": ("clam",),
    "clam.ltm": ("clam",),
    "clam.triples": ("clam",),
}

Key = tuple[str, str]  # (tenant, area)
# Areas whose snapshot is costly pushed less often: the flow panel counts the tenant's audit rows.
AREA_WINDOWS: dict[str, float] = {"flow": 1.0}


@dataclass(frozen=True)
class Change:
    areas: tuple[str, ...]
    tenants: tuple[str, ...] | None  # None: too many to list; every connected tenant may be concerned


def parse_change(payload: str) -> Change | None:
    """A ``hivemem_changes`` payload (``{"table": ..., "tenants": [...] | null}``); None if not ours."""
    try:
        doc = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    areas = TABLE_AREAS.get(str(doc.get("table")))
    if not areas:
        return None
    tenants = doc.get("tenants")
    if tenants is None:
        return Change(areas, None)
    if not isinstance(tenants, list):
        return None
    return Change(areas, tuple(str(t) for t in tenants))


@dataclass
class Coalescer:
    """At most one push per key per ``window`` seconds: the first change of a quiet key is due at
    once (leading edge), changes within the window after a push are folded into one push at the
    window's end (trailing edge). So a burst of 3,000 notifications becomes ~1/window pushes, and
    the last change of a burst is always pushed."""

    window: float = 0.1
    windows: dict[str, float] = field(default_factory=lambda: dict(AREA_WINDOWS))  # per area, overriding it
    _last: dict[Key, float] = field(default_factory=dict)  # when the key was last taken
    _due: dict[Key, float] = field(default_factory=dict)  # pending keys and when they are due

    def mark(self, key: Key, now: float) -> float:
        """Note a change of ``key``; return when it is due."""
        if key in self._due:
            return self._due[key]
        last = self._last.get(key)
        due = now if last is None else max(now, last + self.windows.get(key[1], self.window))
        self._due[key] = due
        return due

    def take_due(self, now: float) -> list[Key]:
        """The keys due by ``now``, removed from the pending set and stamped as pushed at ``now``."""
        ready = [k for k, due in self._due.items() if due <= now]
        for k in ready:
            del self._due[k]
            self._last[k] = now
        return ready

    def next_due(self) -> float | None:
        return min(self._due.values(), default=None)

    def forget(self, tenant: str) -> None:
        """The tenant's last dashboard left: drop its keys (memory stays bounded by connected tenants)."""
        for d in (self._last, self._due):
            for k in [k for k in d if k[0] == tenant]:
                del d[k]
