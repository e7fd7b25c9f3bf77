"""The count of HTTP requests by method, route and status (``hivemem_http_requests`` on /metrics), as a plain ASGI
middleware.

It was Starlette's ``@app.middleware("http")``, a ``BaseHTTPMiddleware``: every request then ran in a task of its
own behind memory streams, about 0.75 ms of the API's one event-loop thread per request (a bare FastAPI route:
0.54-0.80 ms a request without it, 1.28-1.76 ms with it; this middleware adds 0.01-0.06 ms). A search is bound
by that thread, so the count now only watches the response start go by.
"""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class RequestCount:
    """Counts each HTTP request once it is answered: ``counter.labels(method, route, status)``, the route the
    router matched (``unmatched`` for none) and the status the response started with (500 when the app raised
    before starting one)."""

    def __init__(self, app: ASGIApp, counter: Any) -> None:
        self.app = app
        self.counter = counter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            route = getattr(scope.get("route"), "path", "unmatched")
            self.counter.labels(scope["method"], route, str(status)).inc()
