"""The MCP tool table: each tool is one HTTP API operation, and its input schema is generated
from the very Pydantic models the route uses, so MCP and HTTP take the same input and answer the
same thing ("same request, same result").

A ``ToolSpec`` names the route (``method``, ``path``) and its models:

- ``body``: the route's request body model; the tool's arguments are the body. For
  ``POST /api/v1/envelopes`` (``envelope="proposal"``...) it is the payload model the route checks
  for that ``type`` (``contracts.models.PAYLOAD_MODELS``), and the arguments are the envelope's payload.
- ``query``: the route's path and query parameters, one field per parameter named as in the route
  (``proposal_id`` fills ``{proposal_id}``, ``as_of`` is ``?as_of=``); the tool takes them camelCase
  (``proposalId``, ``asOf``), like the body fields.

- ``by_alias``: the body schema's property names are the fields' aliases (camelCase here) or, when
  False, the fields' own names (the snake_case of the KSTAR tools, which the routes accept too).
- ``choose``: a tool that stands for several routes picks one from its arguments (KSTAR's
  ``query_memory``: a filter query, a text search, perceptions or facts).

Adding a tool is one ``ToolSpec`` row (tests/unit/test_mcp_tools.py checks each row against the
app's routes). The KMP names are taken by the ``/kmp/v1/*`` rows below: kernel_ingest,
kernel_write_memory, kernel_wake, kernel_ask, kernel_goto, kernel_near, kernel_rewind,
kernel_forward, kernel_trace, kernel_inspect.

KSTAR (seed 003, X-25) is a second MCP server, named ``kstar`` (``/mcp/kstar``, ``hivemem mcp
--server kstar``), whose table is ``projections/mcp/kstar_tools.py``: store_trace, query_memory,
query_traces, store_perception, store_fact, store_skill, update_skill (alias update_skill_maturity),
store_control_token, verify_control_token, revoke_control_token, get_token_lineage, export_memory
(alias export_bundle), import_bundle (tests/unit/test_mcp_kstar_tools.py).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from contracts.models import MAX_ID, MAX_LABEL, PAYLOAD_MODELS, ProposalPayload, VotePayload
from projections.http import kmp_models as kmp
from projections.http.caml import ObserveIn, RecallIn, ValidateIn
from projections.http.kmms import AddIn, SearchIn
from projections.http.limits import MAX_INSTANT, MAX_TOKEN

Method = Literal["GET", "POST"]
ENVELOPES_PATH = "/api/v1/envelopes"


class Params(BaseModel):
    """Path and query parameters of a route: field names are the route's, arguments camelCase."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


Id = Annotated[str, Field(min_length=1, max_length=MAX_ID)]
WaitMs = Annotated[int | None, Field(ge=0, le=30_000, description="how long to wait for the verdict (ms)")]


class Consistent(Params):
    """The consistency parameters every read route takes (``projections.http.context.consistency_params``)."""

    consistency: Annotated[str | None, Field(max_length=MAX_TOKEN)] = Field(
        default=None, description="a consistencyToken a write of your tenant returned: wait until it is visible"
    )
    wait_ms: Annotated[int | None, Field(ge=0)] = Field(
        default=None, description="how long to wait for the consistency token (ms, default 5000, capped at 30000)"
    )


class ProposalQuery(Consistent):
    proposal_id: Id


class FactQuery(Consistent):
    fact_key: Id
    as_of: Annotated[str | None, Field(max_length=MAX_INSTANT)] = Field(
        default=None, description="ms since the epoch or ISO-8601 with a zone: the version valid then"
    )


class ClawsQuery(Consistent):
    capability: Annotated[str | None, Field(max_length=MAX_LABEL)] = Field(
        default=None, description="e.g. logs.read (matches logs.read:/var/log/app/*)"
    )


class WaitQuery(Params):
    """``?wait_ms=`` of the write routes that wait for their verdict."""

    wait_ms: WaitMs = None


Chooser = Callable[[dict[str, Any]], "tuple[ToolSpec, dict[str, Any]]"]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    method: Method
    path: str  # {placeholders} are fields of ``query``
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    envelope: str | None = None  # POST /api/v1/envelopes: the body is the payload of an envelope of this type
    by_alias: bool = True  # body schema by alias (camelCase) or, False, by field name (snake_case)
    choose: Chooser | None = None  # several routes: the spec (and arguments) a call's arguments select

    def __post_init__(self) -> None:
        envelope_ok = self.path == ENVELOPES_PATH and PAYLOAD_MODELS.get(self.envelope or "") is self.body
        if self.envelope is not None and not envelope_ok:
            raise ValueError(f"{self.name}: an envelope tool posts {ENVELOPES_PATH} with that type's payload model")
        if self.method == "GET" and self.body is not None:
            raise ValueError(f"{self.name}: a GET route has no body")
        overlap = set(self.query_fields().values()) & set(self._body_schema().get("properties", {}))
        if overlap:
            raise ValueError(f"{self.name}: {sorted(overlap)} are both body fields and parameters")

    def query_fields(self) -> dict[str, str]:
        """Route parameter name -> tool argument name."""
        if self.query is None:
            return {}
        return {name: f.alias or name for name, f in self.query.model_fields.items()}

    def path_params(self) -> list[str]:
        return [seg[1:-1] for seg in self.path.split("/") if seg.startswith("{") and seg.endswith("}")]

    def _body_schema(self) -> dict[str, Any]:
        return self.body.model_json_schema(by_alias=self.by_alias) if self.body is not None else {}

    @cached_property
    def input_schema(self) -> dict[str, Any]:
        """The body model's JSON schema, with the route's parameters added as properties."""
        schema = self._body_schema() or {"type": "object", "properties": {}, "additionalProperties": False}
        if self.query is not None:
            params = self.query.model_json_schema(by_alias=True)
            schema = copy.deepcopy(schema)
            schema.setdefault("properties", {}).update(params["properties"])
            required = [*schema.get("required", []), *params.get("required", [])]
            if required:
                schema["required"] = required
            if "$defs" in params:
                schema.setdefault("$defs", {}).update(params["$defs"])
            schema.setdefault("title", params.get("title", self.name))
        return schema


TOOLS: tuple[ToolSpec, ...] = (
    # The knowledge pool: proposals, votes, facts, claws (docs/architecture.md).
    ToolSpec("propose", "Propose a shared fact; a quorum of your tenant's claws votes on it. Answers the write's "
             "consistencyToken: give it to proposal_status as consistency.", "POST", ENVELOPES_PATH,
             body=ProposalPayload, envelope="proposal"),
    ToolSpec("vote", "Vote YES or NO on a proposal of your tenant.", "POST", ENVELOPES_PATH, body=VotePayload,
             envelope="vote"),
    ToolSpec("proposal_status", "A proposal with its votes (and why any were refused), tally, decision and fact.",
             "GET", "/api/v1/proposals/{proposal_id}", query=ProposalQuery),
    ToolSpec("fact_as_of", "A shared fact: the current version and its history, or with asOf the version valid "
             "at that instant.", "GET", "/api/v1/facts/{fact_key}", query=FactQuery),
    ToolSpec("find_claws", "Claws of your tenant, optionally only those announcing a capability.", "GET",
             "/api/v1/claws", query=ClawsQuery),
    # CAML: collective memory across operators (docs/caml.md).
    ToolSpec("caml_observe", "Share an observation with every operator's claws (PII-gated, rate-limited).",
             "POST", "/caml/v1/observe", body=ObserveIn, query=WaitQuery),
    ToolSpec("caml_recall", "Recall observations of every operator for a natural-language query, best first.",
             "POST", "/caml/v1/recall", body=RecallIn),
    ToolSpec("caml_validate", "Say whether an observation held when you acted on it (CONFIRMED, REFUTED, "
             "INCONCLUSIVE).", "POST", "/caml/v1/validate", body=ValidateIn, query=WaitQuery),
    # KMMS: the claw's own layered memory (docs/kmms.md).
    ToolSpec("memory_add", "Add an episode (messages or content) to your memory.", "POST",
             "/api/v1/memory/episodes", body=AddIn, query=WaitQuery),
    ToolSpec("memory_search", "Search your memory: evidence hits (episodes to cite) with confidence and hedging, and "
             "context (derived facts, summaries) with the sessions each cites.", "POST", "/api/v1/memory/search",
             body=SearchIn),
    ToolSpec("memory_ask", "Ask your memory: a hedged answer (null when it abstains) and the search behind it.",
             "POST", "/api/v1/memory/ask", body=SearchIn),
    # KMP: navigable process memory (docs/kmp.md).
    ToolSpec("kernel_ingest", "KMP strict write: dimensions, entries, relations and evidence of one about.", "POST",
             "/kmp/v1/ingest", body=kmp.IngestIn, query=WaitQuery),
    ToolSpec("kernel_write_memory", "KMP writer helper: one entry and its connections, checked and compiled.",
             "POST", "/kmp/v1/write-memory", body=kmp.WriteMemoryIn, query=WaitQuery),
    ToolSpec("kernel_wake", "KMP: the minimal state to continue a case.", "POST", "/kmp/v1/wake", body=kmp.WakeIn),
    ToolSpec("kernel_ask", "KMP: answer material with evidence and a confidence (UNKNOWN without evidence).",
             "POST", "/kmp/v1/ask", body=kmp.AskIn),
    ToolSpec("kernel_goto", "KMP: move to a moment or a reference.", "POST", "/kmp/v1/goto", body=kmp.NavIn),
    ToolSpec("kernel_near", "KMP: what happened around a moment or a reference.", "POST", "/kmp/v1/near",
             body=kmp.NavIn),
    ToolSpec("kernel_rewind", "KMP: move backward in time.", "POST", "/kmp/v1/rewind", body=kmp.NavIn),
    ToolSpec("kernel_forward", "KMP: move forward in time.", "POST", "/kmp/v1/forward", body=kmp.NavIn),
    ToolSpec("kernel_trace", "KMP: the relation path between two refs.", "POST", "/kmp/v1/trace", body=kmp.TraceIn),
    ToolSpec("kernel_inspect", "KMP: one node with its links and evidence (raw text only when asked).", "POST",
             "/kmp/v1/inspect", body=kmp.InspectIn),
)  # fmt: skip
BY_NAME: dict[str, ToolSpec] = {t.name: t for t in TOOLS}
if len(BY_NAME) != len(TOOLS):
    raise ValueError("MCP tool names must be unique")
