"""``GET /dashboard`` (the page), ``GET /dashboard/static/{file}`` (package data, vendored JS included)
and the WebSocket ``/dashboard/ws``.

The socket's first message is ``{"token": "<bearer>"}`` (never in the URL, where proxies and logs
would keep it); a bad token closes it with 4401 and the reason, and so does the token's expiry on an open
socket (``AUTH_EXPIRED``: the page asks for a new token). After the login the server sends ``hello``,
the full snapshot of every area, and from then on a message only when a read model changed.
A UI, not an API: none of these routes is in the OpenAPI document.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from pathlib import Path

from fastapi import APIRouter, WebSocket
from fastapi.responses import FileResponse
from starlette.websockets import WebSocketDisconnect, WebSocketState

from projections.auth import AuthError, Principal, verify_token
from projections.dashboard.hub import Hub, message
from projections.dashboard.snapshots import SNAPSHOTS
from projections.http.context import Ctx
from projections.http.errors import ApiError

STATIC = Path(__file__).parent / "static"
LOGIN_TIMEOUT_S = 10.0
MAX_LOGIN_BYTES = 8192
UNAUTHORIZED = 4401  # a WebSocket close code in the application range, after HTTP's 401
_SAFE = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]*(/[A-Za-z0-9_-][A-Za-z0-9_.-]*)?$")
_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".png": "image/png",
          ".svg": "image/svg+xml", ".md": "text/plain", ".txt": "text/plain"}  # fmt: skip
# Everything from this origin; vis-network sets inline styles on the elements it draws.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")  # fmt: skip
_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


class Dashboard:
    """The hub (one per app) and the router; the app closes the hub at shutdown."""

    def __init__(self, ctx: Ctx, window_s: float = 0.1) -> None:
        self.ctx = ctx
        self.hub = Hub(ctx.deps.app_db_url, ctx.pool, window_s)
        self.router = self._router()

    def login(self, first: str | None) -> Principal:
        """The principal of the socket's first message, or AuthError."""
        if first is None or len(first) > MAX_LOGIN_BYTES:
            raise AuthError("AUTH_MISSING", 'send {"token": "<bearer token>"} first')
        try:
            doc = json.loads(first)
        except ValueError as exc:
            raise AuthError("AUTH_MISSING", 'send {"token": "<bearer token>"} first') from exc
        token = doc.get("token") if isinstance(doc, dict) else None
        if not isinstance(token, str):
            raise AuthError("AUTH_MISSING", 'send {"token": "<bearer token>"} first')
        who = verify_token(self.ctx.deps.token_secret, f"Bearer {token}")
        if who.tenant not in self.ctx.deps.tenants:
            raise AuthError("UNKNOWN_TENANT", f"tenant {who.tenant!r} is not configured")
        return who

    def _router(self) -> APIRouter:
        r = APIRouter(include_in_schema=False)

        @r.get("/dashboard")
        async def page() -> FileResponse:
            return FileResponse(STATIC / "index.html", media_type="text/html", headers=_HEADERS)

        @r.get("/dashboard/static/{name:path}")
        async def static(name: str) -> FileResponse:
            path = (STATIC / name).resolve()
            if not _SAFE.match(name) or not path.is_file() or STATIC.resolve() not in path.parents:
                raise ApiError(404, "NOT_FOUND", "no such dashboard file")
            return FileResponse(path, media_type=_TYPES.get(path.suffix, "application/octet-stream"),
                                headers=_HEADERS)  # fmt: skip

        @r.websocket("/dashboard/ws")
        async def socket(ws: WebSocket) -> None:
            await ws.accept()
            try:
                first = await asyncio.wait_for(ws.receive(), LOGIN_TIMEOUT_S)
            except TimeoutError:
                await ws.close(UNAUTHORIZED, "AUTH_MISSING: no token within 10 s")
                return
            if first["type"] == "websocket.disconnect":
                return
            try:
                who = self.login(first.get("text"))
            except AuthError as exc:
                await ws.close(UNAUTHORIZED, f"{exc.code}: {exc.detail}"[:120])
                return
            await ws.send_text(message("hello", {"tenant": who.tenant, "subject": who.subject,
                                                 "areas": list(SNAPSHOTS)}))  # fmt: skip
            await self._serve(ws, who)

        return r

    async def _serve(self, ws: WebSocket, who: Principal) -> None:
        try:
            client = await self.hub.join(who.tenant)
        except Exception:  # Postgres unreachable: say so rather than leave the page waiting
            await ws.close(1011, "the dashboard cannot read the read models now; try again")
            return

        async def write() -> None:
            while True:
                for text in await client.next_messages():
                    await ws.send_text(text)

        async def drain() -> None:
            # The client says nothing after its token; reading tells us when it leaves.
            while (await ws.receive())["type"] != "websocket.disconnect":
                pass

        async def expire() -> None:
            # A socket is authorised by its token for as long as the token is: then the page logs in again.
            exp = who.expires_at
            if exp is None:
                await asyncio.Event().wait()  # never
            else:
                await asyncio.sleep(max(0.0, exp - time.time()))
            await ws.close(UNAUTHORIZED, "AUTH_EXPIRED: token has expired; log in again")

        tasks = [asyncio.create_task(write()), asyncio.create_task(drain()), asyncio.create_task(expire())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.hub.leave(client)
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, WebSocketDisconnect, RuntimeError, OSError):
                    await task
            if ws.application_state == WebSocketState.CONNECTED:
                with contextlib.suppress(RuntimeError, OSError, WebSocketDisconnect):  # the client may be gone
                    await ws.close()
