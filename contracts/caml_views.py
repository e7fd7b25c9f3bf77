"""What CAML's recall answers (``/caml/v1/recall``), declared once for the server (``projections/caml/queries.py``)
and the SDK (``producers/caml_client.py``). Fields are snake_case in Python and camelCase in JSON; an unknown
field is ignored when read, so an older SDK keeps reading a newer server."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class RecallHit(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    observation_id: str
    observation_type: str
    domain: str
    summary: str
    pattern: dict[str, Any]
    confidence: float
    composite_score: float
    similarity: float
    author_reputation: float
    validations: int
    refutations: int
    age_days: float
    created_at: int
    author: str  # a pseudonym: stable per deployment, reveals neither tenant nor claw
    evidence_count: int
    own: bool  # written by the caller's own tenant
    evidence: list[str] | None = None  # only for the caller's own tenant
