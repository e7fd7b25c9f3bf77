"""A canned OpenAI-compatible chat server on 127.0.0.1 for the LLM clients' unit tests (no model is needed).

A ``http.server`` thread answers ``POST /v1/chat/completions`` with the contents given to ``Server.reply``, in
order (the last one repeats), in OpenAI's completion shape; it records each request body and Authorization
header. That exercises the real client: the request shape, JSON extraction, validation, refusal and retry.
The real-model tests (a llama.cpp server) are in tests/llm.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Server:
    url: str
    replies: list[tuple[int, str]] = field(default_factory=list)  # (status, message content), served in order
    bodies: list[dict[str, Any]] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)

    def reply(self, *contents: str | dict[str, Any], status: int = 200) -> None:
        self.replies[:] = [(status, c if isinstance(c, str) else json.dumps(c)) for c in contents]


@pytest.fixture
def server() -> Iterator[Server]:
    state = Server(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.bodies.append(body)
            state.auth.append(self.headers.get("Authorization"))
            status, content = state.replies.pop(0) if len(state.replies) > 1 else state.replies[0]
            if self.path != "/v1/chat/completions":
                status = 404
            if status == 400 and "response_format" not in body:
                status = 200  # a server that only refuses response_format
            payload = {"id": "x", "object": "chat.completion", "model": body.get("model"),
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": content}}]}  # fmt: skip
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
