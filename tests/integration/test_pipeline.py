"""Claw -> Kafka -> gate -> projection -> Postgres -> HTTP, on the real parts."""

import base64
import time
import uuid

import pytest

from contracts.avro import encode_envelope
from contracts.topics import partition_key
from hivemem.stack import Stack
from tests.conftest import wait_until
from tests.helpers import episode
from tests.integration.support import audit_codes, client, http, owner_db

pytestmark = pytest.mark.integration


def test_publish_is_readable_over_http(stack: Stack) -> None:
    c = client(stack)
    trace = f"t-{uuid.uuid4()}"
    c.heartbeat()
    token = c.publish("capabilities", {"capabilities": ["logs.read:/var/log/app/*"]}, trace_id=trace)
    with http(stack) as h:
        claws = h.get("/api/v1/claws", params={"capability": "logs.read", "consistency": str(token)}).json()
        mine = [x for x in claws if x["clawId"] == c.claw_id]
        assert mine and mine[0]["capabilities"] == ["logs.read:/var/log/app/*"] and mine[0]["active"]
        audit = h.get("/api/v1/audit", params={"traceId": trace, "consistency": str(token)}).json()
    assert [(a["type"], a["outcome"], a["clawId"]) for a in audit] == [("capabilities", "ACCEPTED", c.claw_id)]


def test_same_idempotency_key_five_times_is_applied_once(stack: Stack) -> None:
    c = client(stack)
    trace, body = f"t-{uuid.uuid4()}", episode()
    tokens = [c.publish("episode", body, idempotency_key=f"k-{trace}", trace_id=trace) for _ in range(5)]
    with http(stack) as h:
        audit = h.get("/api/v1/audit", params={"traceId": trace, "consistency": str(tokens[-1])}).json()
    assert (
        sorted((a["outcome"], a["reasonCode"]) for a in audit) == [("ACCEPTED", None)] + [("REJECTED", "DUPLICATE")] * 4
    )


def test_bad_inputs_rejected_with_reason_codes_and_good_ones_in_the_same_batch_applied(stack: Stack) -> None:
    c = client(stack)
    trace = f"t-{uuid.uuid4()}"
    topic = stack.settings.topics.inbound("episode")
    key = partition_key("acme", "about:checkout")
    positions: dict[str, tuple[int, int]] = {}

    def raw(name: str, value: bytes) -> None:
        c.produce_raw(
            topic,
            key,
            value,
            lambda err, msg: positions.__setitem__(name, (int(msg.partition() or 0), int(msg.offset() or 0))),
        )

    good = [c.build("episode", episode(), trace_id=trace) for _ in range(6)]
    replayed = c.build("episode", episode(), trace_id=trace)
    no_trace = c.build("episode", episode(), trace_id=trace).model_copy(update={"instance_id": ""})
    raw("good0", encode_envelope(good[0]))
    raw("garbage", b"\x00\xff not an envelope")
    raw("good1", encode_envelope(good[1]))
    raw("unknown_schema", b"\xc3\x01" + b"\x42" * 8 + b"\x00\x00")
    raw("good2", encode_envelope(good[2]))
    raw("missing_field", encode_envelope(no_trace))
    raw("bad_signature", encode_envelope(good[3].model_copy(update={"signature": b"\x01" * 32})))
    raw("good3", encode_envelope(good[4]))
    skewed = c.build("episode", episode(), trace_id=trace, timestamp_ms=int(time.time() * 1000) - 600_000)
    raw("clock_skew", encode_envelope(skewed))
    raw("replay_first", encode_envelope(replayed))
    raw("replayed", encode_envelope(replayed))
    raw("good4", encode_envelope(good[5]))
    c.flush()
    expected = {"garbage": "MALFORMED", "unknown_schema": "UNKNOWN_SCHEMA", "missing_field": "MISSING_FIELD",
                "bad_signature": "BAD_SIGNATURE", "clock_skew": "CLOCK_SKEW", "replayed": "REPLAYED"}  # fmt: skip
    with owner_db(stack) as conn:

        def verdicts() -> dict[str, str] | None:
            out = {}
            for name, (part, off) in positions.items():
                row = conn.execute(
                    "SELECT coalesce(reason_code, outcome) FROM audit.events WHERE source_topic = %s "
                    "AND source_partition = %s AND source_offset = %s",
                    (topic, part, off),
                ).fetchone()
                if row is None:
                    return None
                out[name] = str(row[0])
            return out

        got = wait_until(verdicts, what="every record audited")
    for name, code in expected.items():
        assert got[name] == code, name
    assert all(got[n] == "ACCEPTED" for n in got if n.startswith("good") or n == "replay_first")
    assert audit_codes(stack, trace).count("ACCEPTED") == 6  # good0-4 and replay_first


def test_gateway_write_then_read_your_write(stack: Stack) -> None:
    claw = f"claw-{uuid.uuid4().hex[:6]}"
    trace = f"t-{uuid.uuid4()}"
    with http(stack, claw=claw) as h:
        r = h.post("/api/v1/envelopes", json={"type": "presence", "payload": {"status": "ACTIVE", "healthy": True},
                                              "traceId": trace})  # fmt: skip
        assert r.status_code == 202, r.text
        token = r.json()["consistencyToken"]
        claws = h.get("/api/v1/claws", params={"consistency": token}).json()
        assert claw in [x["clawId"] for x in claws]
        bad = h.post("/api/v1/envelopes", json={"type": "presence", "payload": {}, "tenant": "globex"})
        assert (bad.status_code, bad.json()["code"]) == (403, "TENANT_MISMATCH")
        bad = h.post("/api/v1/envelopes", json={"type": "decision", "payload": {}})
        assert (bad.status_code, bad.json()["code"]) == (422, "UNKNOWN_TYPE")
        bad = h.post("/api/v1/envelopes", json={"type": "episode", "payload": {"about": "x"}})
        assert (bad.status_code, bad.json()["code"]) == (422, "INVALID_FIELD")
        sig = base64.b64encode(b"\x00" * 32).decode()
        bad = h.post("/api/v1/envelopes", json={"type": "presence", "payload": {}, "signature": sig})
        assert (bad.status_code, bad.json()["code"]) == (401, "BAD_SIGNATURE")


def test_auth_errors_and_health(stack: Stack) -> None:
    import httpx

    from projections.auth import mint_token

    with httpx.Client(base_url=stack.api_url, timeout=30) as h:
        assert h.get("/healthz").json() == {"status": "ok"}
        ready = h.get("/readyz").json()
        assert ready["ready"] and ready["checks"]["kafka"] == "ok"
        assert "claws" in ready["checks"]["projectionLag"]
        assert h.get("/api/v1/claws").json()["code"] == "AUTH_MISSING"
        expired = mint_token(stack.settings.load_config().token_secret, "acme", "t", ttl_s=-10)
        r = h.get("/api/v1/claws", headers={"Authorization": f"Bearer {expired}"})
        assert (r.status_code, r.json()["code"]) == (401, "AUTH_EXPIRED")
        forged = mint_token(b"not-the-secret-of-this-deployment", "acme", "t")
        assert h.get("/api/v1/claws", headers={"Authorization": f"Bearer {forged}"}).json()["code"] == "AUTH_INVALID"
        assert "hivemem_http_requests_total" in h.get("/metrics").text
        assert "/api/v1/envelopes" in h.get("/openapi.json").json()["paths"]
