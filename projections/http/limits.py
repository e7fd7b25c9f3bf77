"""Limits at the HTTP edge: the request body cap (an ASGI middleware) and the parameter types
that bound path and query strings before they reach Postgres or Kafka.
"""

from __future__ import annotations

from pydantic import AfterValidator
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from contracts.models import MAX_ID, MAX_LABEL, clean_text, has_text
from projections.http.errors import error_bytes

# 1 MiB: room for the largest envelope the field limits allow in ordinary text, while one
# request can never make the API buffer more than this.
MAX_BODY_BYTES = 1_048_576
MAX_TOKEN = 300  # topic (at most 249) : partition : offset
MAX_INSTANT = 64


# Annotated metadata for path and query strings, beside a Path()/Query() with the length bound
# (MAX_ID for ids, MAX_LABEL for labels): FastAPI validates both and documents the bound, and
# a refusal is 422 INVALID_REQUEST like any other bad parameter.
Clean = AfterValidator(clean_text)
# A question or query field: refused (422 INVALID_REQUEST) when it holds only white space.
Asks = AfterValidator(has_text)
__all__ = ["MAX_BODY_BYTES", "MAX_ID", "MAX_INSTANT", "MAX_LABEL", "MAX_TOKEN", "Asks", "BodyLimit", "Clean",
           "clean_text"]  # fmt: skip


class BodyLimit:
    """Answers 413 ``PAYLOAD_TOO_LARGE`` to a request whose body exceeds ``limit`` bytes.

    A declared ``Content-Length`` over the limit is refused before reading anything; a body
    without one (chunked) is read up to the limit and refused as soon as it passes it. The
    body read here is handed on to the app unchanged, so nothing downstream buffers more.
    """

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > self.limit:
            await self._too_large(send, int(declared))
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: nothing to answer
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.limit:
                await self._too_large(send, None)
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()  # after the body: only http.disconnect is left to wait for

        await self.app(scope, replay, send)

    async def _too_large(self, send: Send, declared: int | None) -> None:
        said = f"{declared} bytes" if declared is not None else "the body"
        body = error_bytes("PAYLOAD_TOO_LARGE", f"{said} exceeds the limit of {self.limit} bytes per request")
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})  # fmt: skip
        await send({"type": "http.response.body", "body": body})
