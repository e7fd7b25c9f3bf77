"""``/mcp`` (the ``hivemem`` server) and ``/mcp/kstar`` (the ``kstar`` server) on the API: streamable
HTTP with bearer-token auth; each tool call is served in-process by the same app
(``httpx.ASGITransport``) with the MCP request's own token."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from projections.auth import AuthError, verify_token
from projections.http.errors import error_bytes
from projections.mcp.server import SERVER_NAME, authorization_of_request, build


class McpEndpoint:
    """The ASGI endpoint: 401/403 JSON ``{code, detail}`` before MCP sees a request without a
    valid token of a configured tenant, exactly as the API's routes answer it. ``server`` names the
    tool table served (``projections.mcp.server.SERVERS``)."""

    def __init__(self, app: ASGIApp, token_secret: bytes, tenants: Mapping[str, Any],
                 server: str = SERVER_NAME) -> None:  # fmt: skip
        # raise_app_exceptions=False: an unexpected failure reaches the tool as the app's own
        # 500 INTERNAL_ERROR answer, as it reaches an HTTP caller.
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        self.client = httpx.AsyncClient(transport=transport, base_url="http://hivemem.local", timeout=60)
        # Stateless JSON: every POST is self-contained, so no session outlives its request and any
        # API worker can serve it. Bearer auth protects the endpoint: the SDK's DNS-rebinding guard
        # (for unauthenticated local servers) stays off.
        self.manager = StreamableHTTPSessionManager(
            app=build(self.client, authorization_of_request, server), json_response=True, stateless=True,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False))  # fmt: skip
        self.secret, self.tenants = token_secret, tenants

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The session manager's task group; must run inside the app's lifespan."""
        try:
            async with self.manager.run():
                yield
        finally:
            await self.client.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        header = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == b"authorization"), None)
        try:
            who = verify_token(self.secret, header)
        except AuthError as exc:
            return await _refuse(send, 401, exc.code, exc.detail)
        if who.tenant not in self.tenants:
            return await _refuse(send, 403, "UNKNOWN_TENANT", "the token's tenant is not configured")
        await self.manager.handle_request(scope, receive, send)


async def _refuse(send: Send, status: int, code: str, detail: str) -> None:
    body = error_bytes(code, detail)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"www-authenticate", b"Bearer")]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})
