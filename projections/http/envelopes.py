"""``POST /api/v1/envelopes``: the write gateway over HTTP.

No `from __future__ import annotations` here: FastAPI must see the real dependency types.
"""

from typing import Annotated

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from projections.auth import Principal
from projections.gate.gateway import EnvelopeIn, envelope_from_request
from projections.http.context import Ctx
from projections.http.errors import error_responses


class WriteAccepted(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    consistency_token: str  # topic:partition:offset; give it to reads as consistency=
    topic: str
    partition: int
    offset: int
    event_id: str
    trace_id: str
    idempotency_key: str


def router(ctx: Ctx) -> APIRouter:
    r = APIRouter(tags=["envelopes"])
    Who = Annotated[Principal, Depends(ctx.principal)]

    @r.post("/api/v1/envelopes", status_code=202, response_model=WriteAccepted, response_model_by_alias=True,
            responses=error_responses(400, 401, 403, 413, 422, 503,
                                      _422="Refused envelope or request (INVALID_REQUEST, INVALID_FIELD, UNKNOWN_TYPE, "
                                      "MISSING_FIELD, UNKNOWN_KEY, SCHEMA_VERSION_MISMATCH)",
                                      _503="Kafka did not take the write (PUBLISH_FAILED)"))  # fmt: skip
    async def write(who: Who, body: EnvelopeIn) -> WriteAccepted:
        """Publish one envelope to its inbound topic; the gate judges it asynchronously (see the audit)."""
        env = envelope_from_request(body, who, ctx.deps.tenants)
        pos = await ctx.publish(env)
        return WriteAccepted(consistency_token=str(pos), topic=pos.topic, partition=pos.partition, offset=pos.offset,
                             event_id=env.event_id, trace_id=env.trace_id,
                             idempotency_key=env.idempotency_key)  # fmt: skip

    return r
