"""One error shape for every answer that is not a success: ``{"code": ..., "detail": ...}``.

Our own errors, FastAPI's request validation, Starlette's 400/404/405 and anything unexpected
all leave through here, so a client can always read ``code`` (and OpenAPI says so: routes
declare ``ErrorBody`` for their error statuses, not FastAPI's ``HTTPValidationError``).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from typing import Any

import psycopg
from confluent_kafka import KafkaException
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from psycopg_pool import PoolTimeout
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from projections.auth import AuthError
from projections.gate.gateway import GatewayRefusal, describe_validation

log = logging.getLogger("hivemem.api")

MAX_DETAIL = 1_000  # a bound on every detail, whatever builds it (a detail never quotes submitted content)


class ApiError(Exception):
    def __init__(self, status: int, code: str, detail: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail, self.headers = status, code, detail, headers


class ErrorBody(BaseModel):
    """Every error answer."""

    code: str = Field(description="stable reason code, e.g. AUTH_MISSING, INVALID_FIELD, NOT_FOUND")
    detail: str = Field(description="human-readable explanation; not stable")


_DESCRIPTIONS = {
    400: "The request could not be read (BAD_REQUEST)",
    401: "No, invalid or expired bearer token (AUTH_MISSING, AUTH_INVALID, AUTH_EXPIRED), or an envelope whose "
    "key or signature does not verify (UNKNOWN_KEY, BAD_SIGNATURE)",
    403: "The token's tenant is not configured (UNKNOWN_TENANT), or the envelope names another tenant or claw "
    "(TENANT_MISMATCH, CLAW_MISMATCH)",
    404: "Not found",
    409: "Conflicts with what was written before (DUPLICATE, DUPLICATE_OBSERVATION, DUPLICATE_VALIDATION, ...)",
    413: "Request body over the limit, or an envelope too large for one Kafka record (PAYLOAD_TOO_LARGE)",
    422: "A parameter, body or field that is refused (INVALID_REQUEST, INVALID_FIELD, INVALID_CONSISTENCY_TOKEN, ...)",
    429: "Over the operator's write quota (RATE_LIMITED); Retry-After says when to retry, in seconds",
    503: "Postgres or Kafka is unavailable (DATABASE_UNAVAILABLE, KAFKA_UNAVAILABLE, PUBLISH_FAILED)",
    504: "The read model did not reach the consistency token within wait_ms (CONSISTENCY_TIMEOUT)",
}

# Statuses Starlette raises itself (routing, body parsing) and the code each gets.
_HTTP_CODES = {400: "BAD_REQUEST", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 413: "PAYLOAD_TOO_LARGE",
               415: "UNSUPPORTED_MEDIA_TYPE"}  # fmt: skip


def error_responses(*statuses: int, **described: str) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses=`` for these error statuses, all with ``ErrorBody``; ``described``
    (``_404="..."``) overrides a description."""
    out: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        out[status] = {"model": ErrorBody, "description": described.get(f"_{status}", _DESCRIPTIONS[status])}
    return out


def printable(text: str) -> str:
    """Text safe to put in a JSON body: valid UTF-8 (lone surrogates escaped), bounded."""
    if len(text) > MAX_DETAIL:
        text = text[:MAX_DETAIL] + "…"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def error_response(status: int, code: str, detail: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"code": code, "detail": printable(detail)}, status_code=status, headers=headers)


def error_bytes(code: str, detail: str) -> bytes:
    """The same body, for the layers below FastAPI (ASGI middleware, the HTTP protocol)."""
    return json.dumps({"code": code, "detail": printable(detail)}).encode()


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.detail, exc.headers)

    @app.exception_handler(GatewayRefusal)
    async def _refused(_: Request, exc: GatewayRefusal) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.detail)

    @app.exception_handler(AuthError)
    async def _auth_error(_: Request, exc: AuthError) -> JSONResponse:
        return error_response(401, exc.code, exc.detail, {"WWW-Authenticate": "Bearer"})

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, "INVALID_REQUEST", describe_validation(list(exc.errors())))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, f"HTTP_{exc.status_code}")
        headers = exc.headers
        if exc.status_code == 405:
            fallback = (headers or {}).get("Allow", "")
            headers = {**(headers or {}), "Allow": allowed_methods(app, request.url.path, fallback)}
        return error_response(exc.status_code, code, str(exc.detail), headers)

    @app.exception_handler(psycopg.OperationalError)
    @app.exception_handler(PoolTimeout)
    async def _database(_: Request, exc: Exception) -> JSONResponse:
        log.warning("database unavailable: %s", exc)
        return error_response(503, "DATABASE_UNAVAILABLE", "the database is not reachable; retry later")

    @app.exception_handler(KafkaException)
    async def _kafka(_: Request, exc: KafkaException) -> JSONResponse:
        log.warning("kafka unavailable: %s", exc)
        return error_response(503, "KAFKA_UNAVAILABLE", "Kafka is not reachable; retry later")

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        # A bug: logged with its traceback, answered in the one error shape without internals.
        log.error("unhandled error", exc_info=exc)
        return error_response(500, "INTERNAL_ERROR", "unexpected server error (logged)")


def allowed_methods(app: FastAPI, path: str, fallback: str) -> str:
    """``Allow`` for a 405: the methods the OpenAPI document gives the path. Starlette names only the
    first route whose path matches, which misses GET /facts beside POST /facts. A literal path
    (``/traces/query``) outranks a template that also matches it (``/traces/{trace_id}``), as it does
    when dispatching. Paths outside the document (``/mcp``) keep Starlette's answer."""
    literal: set[str] = set()
    templated: set[str] = set()
    for template, ops in app.openapi().get("paths", {}).items():
        methods = {m.upper() for m in ops if m.lower() in _HTTP_METHODS}
        if "{" not in template:
            if template == path:
                literal |= methods
        elif re.fullmatch(re.sub(r"\\\{[^}]*\\\}", "[^/]+", re.escape(template)), path):
            templated |= methods
    return ", ".join(sorted(literal or templated)) or fallback


_HTTP_METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})
