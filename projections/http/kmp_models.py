"""Request bodies of ``/kmp/v1/*`` (the MCP kernel tools take the same models)."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from contracts.models import MAX_ID, MAX_ITEMS, MAX_TEXT, KmpIngestPayload
from projections.http.limits import Asks, Clean

IdStr = Annotated[str, Field(min_length=1, max_length=MAX_ID), Clean]
KnownAt = Annotated[int | None, Field(default=None, ge=0, le=2**62,
                                      description="ms since the epoch: answer as known then (log time); "
                                      "default now")]  # fmt: skip


class Body(BaseModel):
    # strict: JSON types as declared (false is not 0), like the other routes.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True)


class IngestIn(KmpIngestPayload):
    """kernel_ingest: already-structured memory for one about. The body is the wire payload
    (``contracts.models.KmpIngestPayload``: its parts, limits and strict JSON types are declared there once)
    with the ingest id optional and two fields of the edge's own."""

    model_config = ConfigDict(frozen=False)

    ingest_id: IdStr | None = None  # type: ignore[assignment]  # optional here: the API names one when absent
    idempotency_key: IdStr | None = None
    dry_run: bool = Field(default=False, description="judge and grade against the about as known now; publish nothing")


class Connection(Body):
    target: IdStr
    rel: Annotated[str, Field(min_length=1, max_length=64)]
    semantic_class: Annotated[str, Field(min_length=1, max_length=32)]
    why: Annotated[str, Field(max_length=MAX_TEXT), Clean] = ""
    evidence: list[IdStr] = Field(default_factory=list, max_length=MAX_ITEMS, description="evidence refs")


class NewEvidence(Body):
    text: Annotated[str, Field(min_length=1, max_length=MAX_TEXT), Clean]
    source: Annotated[str, Field(max_length=1_024), Clean] = ""
    id: IdStr | None = None


class WriteMemoryIn(Body):
    """kernel_write_memory: one new entry and its connections; compiled to an ingest."""

    about: IdStr
    kind: Annotated[str, Field(min_length=1, max_length=64)]
    text: Annotated[str, Field(min_length=1, max_length=MAX_TEXT), Clean]
    entry_id: IdStr | None = None
    occurred_at: int | None = Field(default=None, ge=0, le=2**62)
    dimensions: list[IdStr] = Field(default_factory=list, max_length=MAX_ITEMS,
                                    description="dimension ids as 'kind:id' (e.g. 'session:1'); new ones "
                                    "are declared")  # fmt: skip
    connections: list[Connection] = Field(default_factory=list, max_length=MAX_ITEMS)
    evidence: list[NewEvidence] = Field(default_factory=list, max_length=MAX_ITEMS,
                                        description="new evidence supporting the entry; cite it as '#0', "
                                        "'#1'...")  # fmt: skip
    context_refs: list[IdStr] = Field(default_factory=list, max_length=MAX_ITEMS,
                                      description="refs the writer read before writing")  # fmt: skip
    fallback: Literal["ANEMIC", "REJECT"] = Field(
        default="ANEMIC", description="a connection that would be graded SUSPECT: written as an anemic 'follows' "
        "(honest: related by order), or refused")  # fmt: skip
    source_agent: Annotated[str, Field(max_length=1_024), Clean] = ""
    idempotency_key: IdStr | None = None


class ScopeIn(Body):
    mode: Literal["CURRENT_ABOUT", "ABOUTS", "ALL_ABOUTS"] = "CURRENT_ABOUT"
    abouts: list[IdStr] | None = Field(default=None, max_length=100)


class WakeIn(Body):
    about: IdStr
    known_at: KnownAt = None
    max_entries: int = Field(default=20, ge=1, le=200)
    dimensions: list[IdStr] | None = Field(default=None, max_length=MAX_ITEMS)


class AskIn(Body):
    about: IdStr | None = None
    question: Annotated[str, Field(min_length=1, max_length=4_096), Clean, Asks]
    scope: ScopeIn = Field(default_factory=ScopeIn)
    answer_policy: Literal["EVIDENCE_OR_UNKNOWN", "SHOW_CONFLICTS", "BEST_EFFORT"] = "EVIDENCE_OR_UNKNOWN"
    known_at: KnownAt = None
    limit: int = Field(default=5, ge=1, le=50)


class CursorIn(Body):
    ref: IdStr | None = None
    time: int | None = Field(default=None, ge=0, le=2**62, description="an occurred-at time, ms")
    token: Annotated[str, Field(max_length=128)] | None = Field(default=None, description="a nextCursor")


class WindowIn(Body):
    before: int = Field(default=3, ge=0, le=200)
    after: int = Field(default=3, ge=0, le=200)


class NavIn(Body):
    about: IdStr
    cursor: CursorIn = Field(default_factory=CursorIn)
    window: WindowIn = Field(default_factory=WindowIn)
    limit: int = Field(default=10, ge=1, le=200)
    dimensions: list[IdStr] | None = Field(default=None, max_length=MAX_ITEMS)
    known_at: KnownAt = None


class TraceIn(Body):
    about: IdStr
    from_ref: IdStr = Field(alias="from")
    to_ref: IdStr = Field(alias="to")
    max_depth: int = Field(default=6, ge=1, le=32)
    page_size: int = Field(default=50, ge=1, le=200)
    page_offset: int = Field(default=0, ge=0, le=10_000)
    known_at: KnownAt = None


class IncludeIn(Body):
    incoming: bool = True
    outgoing: bool = True
    evidence: bool = True
    raw: bool = Field(default=False, description="the whole text; default is a summary")


class InspectIn(Body):
    about: IdStr
    ref: IdStr
    include: IncludeIn = Field(default_factory=IncludeIn)
    known_at: KnownAt = None


class DiagnoseIn(Body):
    """Why did an answer fail? The question, the refs that should have supported it, the refs the
    reader cited, and whether the answer was right."""

    about: IdStr
    question: Annotated[str, Field(min_length=1, max_length=4_096), Clean, Asks]
    expected_refs: list[IdStr] = Field(max_length=MAX_ITEMS)
    used_refs: list[IdStr] = Field(default_factory=list, max_length=MAX_ITEMS)
    correct: bool = False
    answer_policy: Literal["EVIDENCE_OR_UNKNOWN", "SHOW_CONFLICTS", "BEST_EFFORT"] = "EVIDENCE_OR_UNKNOWN"
    known_at: KnownAt = None
    limit: int = Field(default=5, ge=1, le=50)
