"""The confidence of an ``ask`` answer, from the proof it found, never from how the answer reads.

====================  ==============  ========  =========  ========================================
matched               with_evidence   rich      conflicts  confidence
====================  ==============  ========  =========  ========================================
0                     -               -         -          UNKNOWN (nothing to answer from)
> 0                   0               -         -          UNKNOWN under EVIDENCE_OR_UNKNOWN, else LOW
> 0                   > 0             > 0       0          HIGH (MEDIUM when ``superseded_only``)
> 0                   > 0             0         -          MEDIUM
> 0                   > 0             -         > 0        MEDIUM
====================  ==============  ========  =========  ========================================

Decisions (beyond the brief):

* EVIDENCE_OR_UNKNOWN never guesses: without a single evidenced entry the answer is UNKNOWN.
  SHOW_CONFLICTS and BEST_EFFORT grade alike; they differ in what the answer shows, not in the grade.
* ``superseded_only`` (every matched entry has been superseded) caps HIGH at MEDIUM: the proof is
  sound, but it is about a state that no longer holds.
* The counts must be consistent: ``with_evidence + missing == matched``, all >= 0 (ValueError).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

Confidence = Literal["HIGH", "MEDIUM", "LOW", "UNKNOWN"]
Policy = Literal["EVIDENCE_OR_UNKNOWN", "SHOW_CONFLICTS", "BEST_EFFORT"]
POLICIES: frozenset[str] = frozenset(get_args(Policy))


@dataclass(frozen=True)
class ProofFacts:
    matched: int  # candidate entries found
    with_evidence: int  # of those, how many have >= 1 evidence item
    rich_links: int  # rich relations among the material
    conflicts: int  # contradictions among the material
    missing: int  # matched entries lacking evidence
    superseded_only: bool  # every matched entry has been superseded

    def __post_init__(self) -> None:
        for name in ("matched", "with_evidence", "rich_links", "conflicts", "missing"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.with_evidence + self.missing != self.matched:
            raise ValueError(
                f"with_evidence ({self.with_evidence}) + missing ({self.missing}) != matched ({self.matched})"
            )


def confidence(p: ProofFacts, policy: Policy) -> Confidence:
    """The table of the module docstring."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {sorted(POLICIES)}, got {policy!r}")
    if p.matched == 0:
        return "UNKNOWN"
    if p.with_evidence == 0:
        return "UNKNOWN" if policy == "EVIDENCE_OR_UNKNOWN" else "LOW"
    if p.rich_links > 0 and p.conflicts == 0 and not p.superseded_only:
        return "HIGH"
    return "MEDIUM"
