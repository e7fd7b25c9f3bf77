"""The ``kstar`` MCP server's tool table (seed 003 §9.2 and §13.2, resolution X-25): the union of the
seed's MCP tool names and its manifest capabilities, so a host shows ``mcp__kstar__store_trace`` ...
exactly as the seed lists them. Each tool is a ``/kstar/v1/*`` route (``projections/http/kstar.py``).

Arguments are snake_case, as the seed names them. The routes that store a record (traces,
perceptions, facts, skills) take the record as a free JSON object, validated by the route with
``governance/kstar/records.py``; their input schemas come from the small models below, which mirror
the seed's §3.2 shapes (field names identical, ``id`` and the times optional: the route fills them).
The other tools take the route's own request model, listed by field name (snake_case, which the
routes accept besides their camelCase aliases). Every tool takes ``memory``; writes take ``wait_ms``.

``query_memory`` (the seed: "Query traces, perceptions, or facts") chooses its route from its
arguments: ``kind`` ``traces`` (default) is ``POST /kstar/v1/traces/query``, or with a ``query`` text
``POST /kstar/v1/traces/search``; ``perceptions`` is ``POST /kstar/v1/perceptions/query``;
``facts`` is ``POST /kstar/v1/facts/query``. ``query_traces`` is the manifest's capability, always a
filter query. ``update_skill_maturity`` and ``export_bundle`` are the manifest's names of
``update_skill`` and ``export_memory``: the same routes.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from projections.http import kstar_models as km
from projections.mcp.bridge import ToolInputError
from projections.mcp.tools import ToolSpec

SERVER_NAME = "kstar"
P = "/kstar/v1"
INSTRUCTIONS = ("KSTAR long-term memory (IEEE P3394): episodic traces (situation, task, action, result), "
                "perceptions and facts, skills with a maturity level, and signed control tokens with delegation. "
                "Every tool takes `memory` (default: your claw's own). Export and import portable bundles. "
                "A refused call is an error whose content is {status, code, detail}.")  # fmt: skip
Kind = Literal["traces", "perceptions", "facts"]


class Doc(BaseModel):
    """A seed shape, for the input schema only (the route validates)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


# -- parameters (path and query) ------------------------------------------------------------------


class MemoryParam(Doc):
    memory: str | None = Field(default=None, max_length=256, description="the memory: default your claw's own; "
                               "`<clawId>/<name>` for another of yours")  # fmt: skip


class WriteParams(MemoryParam):
    wait_ms: int | None = Field(default=None, ge=0, le=30_000, description="how long to wait for the verdict "
                                "(ms, default 5000); past it the answer is status PENDING (HTTP 202)")  # fmt: skip


class SkillParams(WriteParams):
    name: str = Field(alias="skill_name", min_length=1, max_length=256, description="the skill's name")


class RevokeParams(WriteParams):
    token_id: str = Field(min_length=1, max_length=256)


class LineageParams(MemoryParam):
    token_id: str = Field(min_length=1, max_length=256)


# -- records (seed §3.2) --------------------------------------------------------------------------

ISO = "ISO-8601 (UTC when no offset is given)"


class Situation(Doc):
    domain: str = Field(description='e.g. "education.evaluation"')
    actor: str | None = Field(default=None, description="the principal who triggered it")
    channel: str | None = Field(default=None, description="the channel used")
    context: dict[str, Any] = Field(default_factory=dict, description="domain-specific context")
    now: str | None = Field(default=None, description=f"the caller's clock, {ISO} (seed §13.4's example)")


class Task(Doc):
    goal: str = Field(description="what was to be achieved")
    constraints: list[Any] = Field(default_factory=list, description="any limitations")


class Action(Doc):
    type: str = Field(description="action category")
    parameters: dict[str, Any] = Field(default_factory=dict, description="action inputs")
    tools_used: list[str] = Field(default_factory=list, description="tools/skills invoked")


class Result(Doc):
    success: bool
    outcome: dict[str, Any] | str | None = Field(default=None, description="domain-specific result")
    side_effects: list[Any] = Field(default_factory=list, description="unintended consequences")


class TraceMetadata(Doc):
    mode: Literal["interactive", "autonomous", "background"] | None = None
    tags: list[str] = Field(default_factory=list)
    linked_traces: list[str] = Field(default_factory=list, description="related trace ids")


class TraceIn(Doc):
    """An episodic trace (seed §3.2.1, STAR)."""

    id: str | None = Field(default=None, description="generated when left out")
    timestamp: str | None = Field(default=None, description=f"{ISO}; default: when it is logged")
    situation: Situation
    task: Task
    action: Action
    result: Result | None = None
    metadata: TraceMetadata = Field(default_factory=TraceMetadata)


class PerceptionIn(Doc):
    """An observation or insight (seed §3.2.2); storing an existing id updates it."""

    id: str | None = Field(default=None, description="generated when left out")
    type: str | None = Field(default=None, description="perception category")
    subject: str | None = Field(default=None, description="what or who this is about")
    content: str = Field(description="natural-language description")
    confidence: float = Field(default=0.5, ge=0, le=1)
    evidence: list[str] = Field(default_factory=list, description="ids of the traces supporting it")
    created_at: str | None = Field(default=None, description=f"{ISO}; default: when it is logged")
    updated_at: str | None = Field(default=None, description=f"{ISO}; default: when it is logged")
    valid_until: str | None = Field(default=None, description=f"optional expiry, {ISO}")


class FactIn(Doc):
    """A factual record (seed §3.2.2)."""

    id: str | None = Field(default=None, description="generated when left out")
    schema_name: str = Field(alias="schema", description="the domain schema's name")
    data: dict[str, Any] = Field(description="schema-conformant data")
    source: str | None = Field(default=None, description="where this came from")
    verified: bool = False
    created_at: str | None = Field(default=None, description=f"{ISO}; default: when it is logged")
    updated_at: str | None = Field(default=None, description=f"{ISO}; default: when it is logged")


class LearnedFrom(Doc):
    traces: list[str] = Field(default_factory=list, description="ids of the traces that contributed")
    explicit_training: bool = False


class SkillDefinition(Doc):
    triggers: list[Any] = Field(default_factory=list, description="when to apply")
    preconditions: list[Any] = Field(default_factory=list, description="requirements")
    procedure: str | None = Field(default=None, description="how to execute (or a reference)")


class Maturity(Doc):
    level: Literal["novice", "competent", "proficient", "expert"] = "novice"
    success_rate: float = Field(default=0.0, ge=0, le=1)
    last_used: str | None = Field(default=None, description=ISO)
    usage_count: int = Field(default=0, ge=0)


class SkillIn(Doc):
    """A learned skill (seed §3.2.3); maturity starts as novice."""

    id: str | None = Field(default=None, description="generated when left out")
    name: str
    description: str | None = None
    learned_from: LearnedFrom = Field(default_factory=LearnedFrom)
    definition: SkillDefinition
    maturity: Maturity = Field(default_factory=Maturity)


class StoreTokenIn(Doc):
    """What the server issues and signs with your claw's issuer key (Ed25519), seed §3.2.4 and §7."""

    token_type: str = Field(max_length=256, description="the token's type, e.g. session, delegation")
    scope: str = Field(max_length=1024, description="what it grants access to: `*` or `:`/`/`-separated segments")
    permissions: list[str] = Field(default_factory=list, max_length=256)
    expires_at: str | None = Field(default=None, description=f"{ISO}; required for session tokens")
    delegation_chain: list[str] = Field(default_factory=list, max_length=64, description="parent token ids, "
                                        "direct parent first; checked against them")  # fmt: skip
    granted_by: str | None = Field(default=None, max_length=256, description="default: your claw's URN")
    token_id: str | None = Field(default=None, max_length=256, description="generated when left out")


class QueryMemoryIn(Doc):
    """Traces by filters or by text, perceptions by filters, or facts of a schema."""

    kind: Kind = Field(default="traces", description="what to query")
    query: str | None = Field(default=None, min_length=1, max_length=1000, description="traces: full-text search "
                              "(then only `fields` and `limit` go with it)")  # fmt: skip
    fields: list[str] | None = Field(default=None, description="text search: dotted paths to search (default all)")
    filters: dict[str, Any] | None = Field(default=None, description="traces, perceptions: dotted paths -> value "
                                           "or {gte, lte, ...}, e.g. {\"situation.domain\": \"billing\"}")  # fmt: skip
    order_by: str | None = Field(default=None, max_length=64, description="traces, perceptions: a top-level field, "
                                 "'-' first for descending")  # fmt: skip
    limit: int | None = Field(default=None, ge=1, le=1000, description="default 100 (text search: 20)")
    offset: int | None = Field(default=None, ge=0, description="traces, perceptions")
    schema_name: str | None = Field(default=None, alias="schema", description="facts (required): the schema")
    path: str | None = Field(default=None, max_length=256, description="facts: JSONPath into data, e.g. $.a.b")
    value: Any = Field(default=None, description="facts: the value at `path`")


# -- the table --------------------------------------------------------------------------------------

QUERY_TRACES = ToolSpec("query_traces", "Query episodic memory (traces) by filters: dotted paths (situation.domain, "
                        "result.success, action.type) and ranges ({gte, lte}) on timestamp; limit 100, offset 0.",
                        "POST", f"{P}/traces/query", body=km.QueryIn, query=MemoryParam, by_alias=False)  # fmt: skip
# The routes query_memory chooses among besides QUERY_TRACES (not tools of their own).
SEARCH_TRACES = ToolSpec("query_memory", "Full-text search over traces.", "POST", f"{P}/traces/search",
                         body=km.SearchIn, query=MemoryParam, by_alias=False)  # fmt: skip
QUERY_PERCEPTIONS = ToolSpec("query_memory", "Query perceptions by filters.", "POST", f"{P}/perceptions/query",
                             body=km.QueryIn, query=MemoryParam, by_alias=False)  # fmt: skip
QUERY_FACTS = ToolSpec("query_memory", "Facts of a schema, optionally by a JSONPath and value.", "POST",
                       f"{P}/facts/query", body=km.FactQueryIn, query=MemoryParam)  # fmt: skip


def choose_query(args: dict[str, Any]) -> tuple[ToolSpec, dict[str, Any]]:
    """query_memory's route for these arguments, and the arguments without ``kind``."""
    rest = {k: v for k, v in args.items() if k != "kind"}
    kind = args.get("kind", "traces")
    if kind == "traces":
        return (SEARCH_TRACES if rest.get("query") is not None else QUERY_TRACES), rest
    if kind == "perceptions":
        return QUERY_PERCEPTIONS, rest
    if kind == "facts":
        return QUERY_FACTS, rest
    raise ToolInputError(f"kind: one of traces, perceptions, facts (got {str(kind)[:64]!r})")


UPDATE_SKILL = ToolSpec("update_skill", "Update skill maturity after use: one use of the skill `skill_name`, "
                        "successful (`outcome` true) or not; the level follows (novice < 5 uses; competent >= 5 at "
                        ">= 60 %; proficient >= 20 at >= 75 %; expert >= 50 at >= 90 %).", "POST",
                        P + "/skills/{name}/outcome", body=km.OutcomeIn, query=SkillParams, by_alias=False)  # fmt: skip
EXPORT_MEMORY = ToolSpec("export_memory", "Export memory to a portable bundle (kstar-bundle 1.0.0, signed with your "
                         "claw's key): control tokens only with include_tokens; `types` to choose; encrypted with a "
                         "passphrase.", "POST", f"{P}/export", body=km.ExportIn, query=MemoryParam,
                         by_alias=False)  # fmt: skip

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("store_trace", "Store an episodic trace in long-term memory: situation, task and action are required, "
             "result optional. Answers the record id (recordId) and status STORED.", "POST", f"{P}/traces",
             body=TraceIn, query=WriteParams),
    ToolSpec("query_memory", "Query traces, perceptions, or facts: kind traces (default) by filters, or by a `query` "
             "text (full-text search); kind perceptions by filters; kind facts by schema (and a JSONPath and value). "
             "Answers {result: [...]}, each {kind, recordId, record, ...}.", "POST", f"{P}/traces/query",
             body=QueryMemoryIn, query=MemoryParam, choose=choose_query),
    QUERY_TRACES,
    ToolSpec("store_perception", "Store an observation or insight: content required, confidence 0..1 (default 0.5). "
             "Storing an existing id updates it.", "POST", f"{P}/perceptions", body=PerceptionIn, query=WriteParams),
    ToolSpec("store_fact", "Store a factual record: schema and data required; data must conform to the schema, "
             "registered in the memory beforehand (POST /kstar/v1/schemas), else KSTAR_UNKNOWN_SCHEMA.", "POST",
             f"{P}/facts", body=FactIn, query=WriteParams),
    ToolSpec("store_skill", "Store or update a learned skill: name and definition required.", "POST", f"{P}/skills",
             body=SkillIn, query=WriteParams),
    UPDATE_SKILL,
    dataclasses.replace(UPDATE_SKILL, name="update_skill_maturity",
                        description="The manifest's name of update_skill: " + UPDATE_SKILL.description),
    ToolSpec("store_control_token", "Store a capability token: the server issues it (token_type and scope required) "
             "and signs it with your claw's issuer key; a delegated token (delegation_chain) is checked against its "
             "parents. Answers the token as signed (record) and its id (recordId).", "POST", f"{P}/tokens",
             body=StoreTokenIn, query=WriteParams),
    ToolSpec("verify_control_token", "Verify token validity for scope: {valid, reason, code}; checks not found, "
             "revoked, expired, scope mismatch, then every ancestor in the delegation chain.", "POST",
             f"{P}/tokens/verify", body=km.VerifyIn, query=MemoryParam, by_alias=False),
    ToolSpec("revoke_control_token", "Revoke a control token (its descendants stop verifying at once); 404 "
             "TOKEN_NOT_FOUND if unknown.", "POST", P + "/tokens/{token_id}/revoke", body=km.RevokeIn,
             query=RevokeParams, by_alias=False),
    ToolSpec("get_token_lineage", "Get the delegation chain of a token: {result: [the token, then its parents, "
             "nearest first]} ([] if unknown).", "GET", P + "/tokens/{token_id}/lineage", query=LineageParams),
    EXPORT_MEMORY,
    dataclasses.replace(EXPORT_MEMORY, name="export_bundle",
                        description="The manifest's name of export_memory: " + EXPORT_MEMORY.description),
    ToolSpec("import_bundle", "Import memory from a bundle: mode merge (existing records win; differences reported "
             "in conflicts) or replace (with confirm). A tampered or wrongly signed bundle is refused whole. Answers "
             "{importedCount, conflicts, ...}.", "POST", f"{P}/import", body=km.ImportIn, query=MemoryParam,
             by_alias=False),
)  # fmt: skip
BY_NAME: dict[str, ToolSpec] = {t.name: t for t in TOOLS}
ALIASES = {"update_skill_maturity": "update_skill", "export_bundle": "export_memory"}
if len(BY_NAME) != len(TOOLS):
    raise ValueError("KSTAR MCP tool names must be unique")
