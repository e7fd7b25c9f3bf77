"""The MCP tool table: each tool is one HTTP API operation, its input schema the route's own
request model, so MCP and HTTP mean the same thing (seed 001: "same request, same result").

Adding a tool is one ``ToolSpec`` row. Reserved for KSTAR (a server named ``kstar``, X-25):
store_trace, query_memory, query_traces, store_perception, store_fact, store_skill, update_skill
(alias update_skill_maturity), store_control_token, verify_control_token, revoke_control_token,
get_token_lineage, export_memory (alias export_bundle), import_bundle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from contracts.models import MAX_ID, MAX_LABEL, ProposalPayload, VotePayload
from projections.http import kmp_models as kmp
from projections.http.caml import ObserveIn, RecallIn, ValidateIn
from projections.http.memory import AddIn, SearchIn

Method = Literal["GET", "POST"]


class ToolArgs(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class ProposalRef(ToolArgs):
    proposal_id: Annotated[str, Field(min_length=1, max_length=MAX_ID)]


class FactAsOf(ToolArgs):
    fact_key: Annotated[str, Field(min_length=1, max_length=MAX_ID)]
    as_of: str | None = Field(default=None, description="ISO 8601 instant; default: the current version")


class ClawsWith(ToolArgs):
    capability: Annotated[str, Field(max_length=MAX_LABEL)] | None = None


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    method: Method
    path: str  # may hold {placeholders} filled from the arguments of the same (snake_case) name
    model: type[BaseModel]
    # Turns the tool's arguments into the HTTP body (default: the arguments as they are).
    body: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    query: tuple[str, ...] = field(default=())  # arguments sent as query parameters (camelCase names)

    def input_schema(self) -> dict[str, Any]:
        return self.model.model_json_schema(by_alias=True)


def _envelope(kind: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda args: {"type": kind, "payload": args}


TOOLS: tuple[ToolSpec, ...] = (
    # The knowledge pool: proposals, votes, facts, claws.
    ToolSpec("propose", "Propose a shared fact (a quorum of claws votes on it).", "POST", "/api/v1/envelopes",
             ProposalPayload, body=_envelope("proposal")),
    ToolSpec("vote", "Vote YES or NO on a proposal.", "POST", "/api/v1/envelopes", VotePayload,
             body=_envelope("vote")),
    ToolSpec("proposal_status", "A proposal with its votes, tally, decision and fact.", "GET",
             "/api/v1/proposals/{proposal_id}", ProposalRef),
    ToolSpec("fact_as_of", "A shared fact: its current version and history, or the version valid at asOf.", "GET",
             "/api/v1/facts/{fact_key}", FactAsOf, query=("asOf",)),
    ToolSpec("find_claws", "Claws of your tenant, optionally those announcing a capability.", "GET",
             "/api/v1/claws", ClawsWith, query=("capability",)),
    # CAML: collective memory across operators.
    ToolSpec("caml_observe", "Share an observation with the collective pool (PII-gated).", "POST",
             "/caml/v1/observe", ObserveIn),
    ToolSpec("caml_recall", "Recall observations for a natural-language query, ranked by the composite score.",
             "POST", "/caml/v1/recall", RecallIn),
    ToolSpec("caml_validate", "Say whether an observation held when you acted on it.", "POST", "/caml/v1/validate",
             ValidateIn),
    # KMMS: the claw's own layered memory.
    ToolSpec("memory_add", "Add an episode (a conversation or a note) to your memory.", "POST",
             "/api/v1/memory/episodes", AddIn),
    ToolSpec("memory_search", "Search your memory top-down, with confidence and provenance.", "POST",
             "/api/v1/memory/search", SearchIn),
    ToolSpec("memory_ask", "Ask your memory: a hedged answer and the retrieval behind it.", "POST",
             "/api/v1/memory/ask", SearchIn),
    # KMP: navigable process memory (seed 001).
    ToolSpec("kernel_ingest", "KMP strict write: dimensions, entries, relations and evidence of one about.", "POST",
             "/kmp/v1/ingest", kmp.IngestIn),
    ToolSpec("kernel_write_memory", "KMP writer helper: one entry and its connections, checked and compiled.",
             "POST", "/kmp/v1/write-memory", kmp.WriteMemoryIn),
    ToolSpec("kernel_wake", "KMP: the minimal state to continue a case.", "POST", "/kmp/v1/wake", kmp.WakeIn),
    ToolSpec("kernel_ask", "KMP: answer material with evidence and a confidence (UNKNOWN without evidence).",
             "POST", "/kmp/v1/ask", kmp.AskIn),
    ToolSpec("kernel_goto", "KMP: move to a moment or a reference.", "POST", "/kmp/v1/goto", kmp.NavIn),
    ToolSpec("kernel_near", "KMP: what happened around a moment or a reference.", "POST", "/kmp/v1/near",
             kmp.NavIn),
    ToolSpec("kernel_rewind", "KMP: move backward in time.", "POST", "/kmp/v1/rewind", kmp.NavIn),
    ToolSpec("kernel_forward", "KMP: move forward in time.", "POST", "/kmp/v1/forward", kmp.NavIn),
    ToolSpec("kernel_trace", "KMP: the relation path between two refs.", "POST", "/kmp/v1/trace", kmp.TraceIn),
    ToolSpec("kernel_inspect", "KMP: one node with its links and evidence (raw text only when asked).", "POST",
             "/kmp/v1/inspect", kmp.InspectIn),
)  # fmt: skip
BY_NAME = {t.name: t for t in TOOLS}
