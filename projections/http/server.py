"""Serving the app with uvicorn, including the errors the app never sees.

A request whose head h11 cannot parse (bad syntax, or headers over
``h11_max_incomplete_event_size``, 16 KiB by default) is answered by uvicorn's protocol
itself, before any ASGI app runs, as ``400 text/plain "Invalid HTTP request received."``.
No middleware can change that; the protocol class can. ``JsonH11Protocol`` answers those in
the one error shape: 431 ``HEADERS_TOO_LARGE`` when the unparsed head passed the limit,
400 ``BAD_REQUEST`` otherwise. ``serve`` runs an app with it.
"""

from __future__ import annotations

import h11
import uvicorn
from fastapi import FastAPI
from uvicorn.protocols.http.h11_impl import DEFAULT_MAX_INCOMPLETE_EVENT_SIZE, H11Protocol

from projections.http.errors import error_bytes


class JsonH11Protocol(H11Protocol):
    def send_400_response(self, msg: str) -> None:
        limit = self.config.h11_max_incomplete_event_size or DEFAULT_MAX_INCOMPLETE_EVENT_SIZE
        # h11 keeps the head it could not complete in its buffer: over the limit means too large.
        if len(self.conn.trailing_data[0]) > limit:
            status, reason, code = 431, b"Request Header Fields Too Large", "HEADERS_TOO_LARGE"
            detail = f"the request head exceeds {limit} bytes"
        else:
            status, reason, code, detail = 400, b"Bad Request", "BAD_REQUEST", msg
        body = error_bytes(code, detail)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                   (b"connection", b"close")]  # fmt: skip
        for event in (h11.Response(status_code=status, headers=headers, reason=reason), h11.Data(data=body),
                      h11.EndOfMessage()):  # fmt: skip
            self.transport.write(self.conn.send(event) or b"")
        self.transport.close()


def serve(app: FastAPI, host: str, port: int, log_level: str = "warning") -> None:
    uvicorn.run(app, host=host, port=port, log_level=log_level, http=JsonH11Protocol)
