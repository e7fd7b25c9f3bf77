"""``/mcp`` on the API: streamable HTTP, bearer-token auth, calls served in-process by the same app."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from projections.auth import AuthError, verify_token
from projections.http.errors import error_bytes
from projections.mcp.server import bearer_of_request, build_server


class McpEndpoint:
    """The ASGI endpoint: 401/403 JSON before MCP sees a request without a valid token."""

    def __init__(self, app: ASGIApp, token_secret: bytes, tenants: Any) -> None:
        # Bearer auth protects it: the SDK's DNS-rebinding guard (for unauthenticated local servers) stays off.
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://hivemem.local",
                                        timeout=60)  # fmt: skip
        self.manager = StreamableHTTPSessionManager(
            app=build_server(self.client, bearer_of_request), json_response=True, stateless=True,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False))  # fmt: skip
        self.secret, self.tenants = token_secret, tenants

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.manager.run():
            yield
        await self.client.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        try:
            who = verify_token(self.secret, headers.get("authorization"))
        except AuthError as exc:
            return await _refuse(send, 401, exc.code, exc.detail)
        if who.tenant not in self.tenants:
            return await _refuse(send, 403, "UNKNOWN_TENANT", f"tenant {who.tenant!r} is not configured")
        await self.manager.handle_request(scope, receive, send)


async def _refuse(send: Send, status: int, code: str, detail: str) -> None:
    body = error_bytes(code, detail)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"www-authenticate", b"Bearer")]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})
