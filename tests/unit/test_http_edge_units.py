"""Pure parts of the HTTP edge: envelope building, the gateway's refusals, instants, the body
cap, the JSON answers of the HTTP protocol layer, token claims."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import jwt
import pytest
import uvicorn
from pydantic import BaseModel, ValidationError

from contracts.avro import ContractError, decode_envelope, encode_envelope, signing_bytes, writer_schema
from contracts.positions import LogPosition
from deploy.kafka_local import free_port
from governance.identity import HMAC_PREFIX, DeploymentKeys, derive_deployment_key
from governance.signing import HmacSigner
from producers import ClawClient, ConsistencyToken
from producers.envelopes import build_envelope
from projections.auth import AuthError, Principal, mint_token, verify_token
from projections.gate.gateway import MAX_RECORD_BYTES, EnvelopeIn, GatewayRefusal, envelope_from_request
from projections.http.errors import printable
from projections.http.limits import BodyLimit
from projections.http.server import JsonH11Protocol
from projections.http.votes import parse_instant
from tests.helpers import SECRET, TENANTS, episode, offline_client

CLAW = Principal(tenant="acme", subject="t", claw_id="claw-1")
# Within every field limit and under the 1 MiB body cap, but over one Kafka record (4-byte characters).
BIG_DIMENSIONS = {f"d{i}": "\U0001f41d" * 1024 for i in range(230)}


def test_consistency_token_is_the_one_log_position_type() -> None:
    assert ConsistencyToken is LogPosition
    assert str(LogPosition.parse("hivemem.vote:2:417")) == "hivemem.vote:2:417"


def test_claw_client_builds_through_the_shared_function() -> None:
    c: ClawClient = offline_client()
    env = c.build("episode", episode(), trace_id="t1")
    key = derive_deployment_key(SECRET, "acme", "claw-1")
    assert DeploymentKeys(TENANTS).resolve("acme", "claw-1", env.key_id) is not None
    assert decode_envelope(encode_envelope(env)) == env
    again = build_envelope("episode", env.payload, tenant="acme", claw_id="claw-1", instance_id=env.instance_id,
                           signer=HmacSigner("hmac:op1", key), event_id=env.event_id, trace_id="t1",
                           timestamp_ms=env.timestamp)  # fmt: skip
    assert again == env  # same header and payload, same signature


@pytest.mark.parametrize("version", [0, -1, 3, 999])
def test_unknown_schema_versions_are_refused_not_rewritten(version: int) -> None:
    with pytest.raises(ContractError) as err:
        build_envelope("presence", {}, tenant="acme", claw_id="c", instance_id="i", key_id="hmac:op1",
                       schema_version=version)  # fmt: skip
    assert err.value.code == "SCHEMA_VERSION_MISMATCH"
    assert build_envelope("presence", {}, tenant="acme", claw_id="c", instance_id="i", key_id="hmac:op1",
                          schema_version=1).schema_version == 1  # fmt: skip


def test_field_limits_refuse_before_anything_is_encoded() -> None:
    for header in ({"timestamp_ms": 2**63}, {"instance_id": "\ud800x"}, {"trace_id": "a\x00b"}):
        kw: dict[str, Any] = {"tenant": "acme", "claw_id": "c", "instance_id": "i", "key_id": "hmac:op1", **header}
        with pytest.raises(ValidationError):
            build_envelope("presence", {}, **kw)


def _gateway(**body: Any) -> Any:
    return envelope_from_request(EnvelopeIn.model_validate(body), CLAW, TENANTS)


def test_gateway_signs_with_the_claws_deployment_key() -> None:
    env = _gateway(type="episode", payload=episode(), traceId="t")
    verifier = DeploymentKeys(TENANTS).resolve("acme", "claw-1", env.key_id)
    assert env.key_id == HMAC_PREFIX + "op1" and verifier is not None
    assert verifier.verify(signing_bytes(writer_schema(env), env.unsigned().to_wire()), env.signature)


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"type": "presence", "payload": {}, "timestamp": 2**63}, 422, "INVALID_FIELD"),
        ({"type": "presence", "payload": {}, "instanceId": "\ud800"}, 422, "INVALID_FIELD"),
        ({"type": "presence", "payload": {}, "schemaVersion": 999}, 422, "SCHEMA_VERSION_MISMATCH"),
        ({"type": "decision", "payload": {}}, 422, "UNKNOWN_TYPE"),
        ({"type": "presence", "payload": {}, "tenant": "globex"}, 403, "TENANT_MISMATCH"),
        ({"type": "presence", "payload": {}, "clawId": "claw-2"}, 403, "CLAW_MISMATCH"),
        ({"type": "presence", "payload": {}, "keyId": "hmac:nope"}, 422, "UNKNOWN_KEY"),
        ({"type": "presence", "payload": {}, "signature": "AAAA"}, 401, "BAD_SIGNATURE"),
        ({"type": "presence", "payload": {}, "signature": "A" * 700}, 422, "INVALID_FIELD"),
        ({"type": "presence", "payload": {}, "signature": "!"}, 422, "INVALID_FIELD"),
        ({"type": "episode", "payload": {**episode(), "dimensions": BIG_DIMENSIONS}}, 413, "PAYLOAD_TOO_LARGE"),
        ({"type": "proposal", "payload": {"proposalId": "p", "factKey": "k", "statement": "s", "proposer": "c",
                                          "deadline": 1, "baseVersion": False}}, 422, "INVALID_FIELD"),
        ({"type": "presence", "payload": {}, "eventId": ""}, 422, "INVALID_FIELD"),
        ({"type": "presence", "payload": {}, "instanceId": ""}, 422, "INVALID_FIELD"),
    ],
)  # fmt: skip
def test_gateway_refusals(body: dict[str, Any], status: int, code: str) -> None:
    with pytest.raises(GatewayRefusal) as err:
        _gateway(**body)
    assert (err.value.status, err.value.code) == (status, code), err.value.detail
    assert MAX_RECORD_BYTES < 1_000_000  # librdkafka's default message.max.bytes


def test_a_gateway_refusal_is_answered_in_the_one_error_shape() -> None:
    # The gateway knows nothing of HTTP's error types; the HTTP layer's handler maps its refusal.
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from projections.http.errors import install_error_handlers

    app = FastAPI()
    install_error_handlers(app)

    @app.get("/refuse")
    def refuse() -> None:
        _gateway(type="presence", payload={}, tenant="other")

    answer = TestClient(app).get("/refuse")
    assert (answer.status_code, answer.json()) == (
        403, {"code": "TENANT_MISMATCH", "detail": "envelope tenant differs from the token's tenant"})  # fmt: skip


def test_instants() -> None:
    assert parse_instant("1700000000000") == 1700000000000
    assert parse_instant("1970-01-01T00:00:01Z") == 1000
    for bad in ("99999999999999999999", "-99999999999999999999", "2026-01-01T00:00", "yesterday",
                "2026-02-31T00:00:00Z", "²"):  # fmt: skip
        with pytest.raises(ValueError):
            parse_instant(bad)


def test_error_details_are_always_encodable() -> None:
    assert printable("a\ud800b") == "a\\ud800b"
    assert len(printable("x" * 10_000)) < 1_100
    json.dumps(printable("\udfff")).encode()


def test_token_claims_are_clean_ids() -> None:
    secret = b"s" * 32
    for claims in ({"tenant": "a\ud800"}, {"tenant": "a\x00"}, {"tenant": "t" * 257}, {"tenant": 5},
                   {"tenant": "acme", "claw": ["x"]}, {"tenant": "acme", "claw": ""}):  # fmt: skip
        token = jwt.encode({"iss": "hivemem", "sub": "s", "exp": int(time.time()) + 60, **claims}, secret, "HS256")
        with pytest.raises(AuthError) as err:
            verify_token(secret, f"Bearer {token}")
        assert err.value.code == "AUTH_INVALID"
    assert verify_token(secret, f"Bearer {mint_token(secret, 'acme', 's', 'c')}") == Principal("acme", "s", "c")


async def _echo(scope: Any, receive: Any, send: Any) -> None:
    body = b""
    while True:
        m = await receive()
        body += m.get("body", b"")
        if not m.get("more_body"):
            break
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": str(len(body)).encode()})


def test_body_limit_with_and_without_content_length() -> None:
    app = BodyLimit(_echo, limit=1000)

    async def run() -> list[tuple[int, str]]:
        async def chunked(n: int) -> Any:
            for _ in range(n):
                yield b"x" * 100

        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as h:
            out = []
            for content in (b"x" * 1000, b"x" * 1001, chunked(10), chunked(11)):
                r = await h.post("/", content=content)
                out.append((r.status_code, r.text if r.status_code == 200 else r.json()["code"]))
            return out

    assert asyncio.run(run()) == [(200, "1000"), (413, "PAYLOAD_TOO_LARGE"), (200, "1000"), (413, "PAYLOAD_TOO_LARGE")]


@pytest.fixture
def json_protocol_server() -> Iterator[int]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(_echo, host="127.0.0.1", port=port, http=JsonH11Protocol, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield port
    server.should_exit = True
    thread.join(10)


def _raw(port: int, request: bytes) -> tuple[bytes, bytes]:
    """Send ``request`` (possibly an unfinished head) and read until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        raw = b""
        while chunk := s.recv(65536):
            raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    return head, body


def test_protocol_errors_answer_json(json_protocol_server: int) -> None:
    # h11 limits only an incomplete head (16 KiB): a head still unfinished past it is refused.
    head, body = _raw(json_protocol_server, b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40_000)
    assert head.startswith(b"HTTP/1.1 431 ") and b"application/json" in head
    assert json.loads(body)["code"] == "HEADERS_TOO_LARGE"
    head, body = _raw(json_protocol_server, b"NOT HTTP AT ALL\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ") and json.loads(body)["code"] == "BAD_REQUEST"
    head, _ = _raw(json_protocol_server, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")


@pytest.mark.parametrize("blank", [" ", "  \t\n ", "\u3000\u2003"])
def test_a_question_of_white_space_only_is_refused_by_every_route_that_asks(blank: str) -> None:
    # Memory search and ask (and their MCP tools), CAML recall, KMP ask and diagnose, KSTAR search: each field that
    # holds the question refuses white space alone; a word around it is a question like any other.
    from projections.http.caml import RecallIn
    from projections.http.kmms import SearchIn
    from projections.http.kmp_models import AskIn, DiagnoseIn
    from projections.http.kstar_models import SearchIn as KstarSearchIn

    asks: tuple[tuple[type[BaseModel], str, dict[str, object]], ...] = (
        (SearchIn, "query", {}), (RecallIn, "query", {}), (AskIn, "question", {}),
        (DiagnoseIn, "question", {"about": "e-1", "expectedRefs": []}), (KstarSearchIn, "query", {}))  # fmt: skip
    for model, field, rest in asks:
        with pytest.raises(ValidationError) as e:
            model.model_validate({field: blank, **rest})
        assert "holds no text, only white space" in str(e.value), model
        assert getattr(model.model_validate({field: f"{blank}bees{blank}", **rest}), field) == f"{blank}bees{blank}"
