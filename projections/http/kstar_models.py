"""Request and answer bodies of ``/kstar/v1/*`` (seed 003 §8, §9, §13.2 capability parameters).

Records themselves (traces, perceptions, facts, skills, tokens) travel as JSON objects in the seed's
snake_case shapes; ``governance/kstar/records.py`` validates them and refuses with a reason code.
"""

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from contracts.models import clean_text, has_text

# A string that can reach Postgres, Avro or a KDF: no NUL, no lone surrogate (422, not a 500 later).
Str = Annotated[str, AfterValidator(clean_text)]

RECORD_DOC = "the record in seed 003 §3.2's shape (snake_case); `id` is generated when left out"


class In(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class Out(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class WriteOut(Out):
    status: Literal["STORED", "UNCHANGED", "CONFLICT", "FORGOTTEN", "PENDING"]
    kind: str
    record_id: str
    memory: str
    known_at: int | None = None
    event_id: str
    consistency_token: str
    record: dict[str, Any] | None = None  # what was sent (a token: as signed)


class QueryIn(In):
    filters: dict[str, Any] = Field(default_factory=dict, description="dotted paths -> value or {gte, lte, ...}")
    order_by: Str | None = Field(default=None, max_length=64, description="a top-level field, '-' for descending")
    limit: int = Field(default=100, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)


class SearchIn(In):
    query: Annotated[Str, AfterValidator(has_text)] = Field(min_length=1, max_length=1000)
    fields: list[Str] = Field(default_factory=list, max_length=16, description="dotted paths; none: every string")
    limit: int = Field(default=20, ge=1, le=1000)


class FactQueryIn(In):
    schema_name: Str = Field(alias="schema", min_length=1, max_length=256)
    path: Str | None = Field(default=None, max_length=256, description="JSONPath into the fact's data, e.g. $.a.b")
    value: Any = None
    limit: int = Field(default=100, ge=1, le=1000)


class OutcomeIn(In):
    outcome: bool


class TokenIn(In):
    """Either a complete signed token (`token`), or what the server should issue and sign with the
    calling claw's issuer key."""

    token: dict[str, Any] | None = None
    token_type: Str | None = Field(default=None, max_length=256)
    scope: Str | None = Field(default=None, max_length=1024)
    permissions: list[Str] = Field(default_factory=list, max_length=256)
    expires_at: Str | None = Field(default=None, description="ISO-8601 UTC; required for session tokens")
    delegation_chain: list[str] = Field(
        default_factory=list, max_length=64, description="direct parent first, root last"
    )
    granted_by: Str | None = Field(default=None, max_length=256, description="default: the calling claw's URN")
    token_id: Str | None = Field(default=None, max_length=256)


class VerifyIn(In):
    token_id: Str = Field(min_length=1, max_length=256)
    scope: Str = Field(min_length=1, max_length=1024)


class VerifyOut(Out):
    valid: bool
    reason: str | None = None
    code: str | None = None
    token: dict[str, Any] | None = None


class RevokeIn(In):
    reason: Str = Field(min_length=1, max_length=1024)


class RegisterIn(In):
    name: Str = Field(min_length=1, max_length=256)
    definition: dict[str, Any] = Field(description="schema: {version, json_schema}; trace category: {domain, "
                                       "required_fields}; token type: {description, scope_pattern, "
                                       "required_permissions}")  # fmt: skip


class ExportIn(In):
    include_tokens: bool = False
    types: list[Literal["traces", "perceptions", "facts", "skills", "control_tokens"]] | None = None
    date_from: Str | None = Field(default=None, alias="from")
    date_to: Str | None = Field(default=None, alias="to")
    passphrase: Str | None = Field(default=None, min_length=8, max_length=1024, description="encrypt the bundle")
    sign: bool = True
    include_episodes: bool = Field(default=True, description="the claw's KMMS episodes (its own memory only)")


class ImportIn(In):
    bundle: dict[str, Any]
    passphrase: Str | None = Field(default=None, max_length=1024)
    mode: Literal["merge", "replace"] = "merge"
    confirm: bool = Field(default=False, description="replace removes the memory's records first: say so")
    types: list[Literal["traces", "perceptions", "facts", "skills", "control_tokens"]] | None = None
    wait_ms: int = Field(default=30_000, ge=0, le=120_000)


class VerifyBundleIn(In):
    bundle: dict[str, Any]
    passphrase: Str | None = Field(default=None, max_length=1024)


class ApplyIn(In):
    """A sync's push: records of the pushing side, applied with each type's conflict policy."""

    records: list[dict[str, Any]] = Field(max_length=1000, description="{kind, record}")
    origin_ref: Str = Field(min_length=1, max_length=256)


class SyncIn(In):
    remote_url: Str = Field(min_length=8, max_length=2048, description="the other HiveMem's API, https://...")
    remote_token: Str = Field(min_length=1, max_length=4096, description="a bearer token of the other deployment")
    wait_ms: int = Field(default=60_000, ge=0, le=300_000)
