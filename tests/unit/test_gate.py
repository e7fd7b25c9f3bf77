"""The gate's controls, driven through GateDriver (no broker)."""

import io

import fastavro
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.avro import decode_rejection, encode_envelope, encode_record, registry
from contracts.positions import LogPosition
from contracts.topics import DEFAULT_PARTITIONS, TopicNames, memory_partition, partition_key, tenant_partition
from governance.refusals import InboundRecord
from processors.gate.core import GateDriver
from tests.helpers import episode, gate_config, now_ms, offline_client

NAMES = TopicNames()
EPISODES = NAMES.inbound("episode")


def pipe_env(driver: GateDriver, env, log_time: int | None = None, key: bytes | None = None):  # type: ignore[no-untyped-def]
    k = key if key is not None else partition_key(env.tenant, env.aggregate)
    return driver.pipe(NAMES.inbound(env.type), k, encode_envelope(env), log_time or env.timestamp)


def code_of(out) -> str:  # type: ignore[no-untyped-def]
    if out.topic == NAMES.rejected:
        return decode_rejection(out.value).reason_code
    return "ACCEPTED"


def test_good_envelope_is_forwarded_unchanged() -> None:
    d = GateDriver(gate_config())
    env = offline_client().build("episode", episode())
    out = pipe_env(d, env)
    assert out.topic == NAMES.accepted("episode")
    assert out.value == encode_envelope(env)
    assert dict(out.headers)["hm-src"] == f"{EPISODES}:0:0".encode()


def test_each_bad_input_has_its_own_reason_code() -> None:
    d = GateDriver(gate_config())
    c = offline_client()
    good = c.build("episode", episode())
    t = now_ms()
    cases = {
        "MALFORMED": lambda: d.pipe(EPISODES, b"k", b"\x00garbage", t),
        "UNKNOWN_SCHEMA": lambda: d.pipe(EPISODES, b"k", b"\xc3\x01" + b"\x01" * 8 + b"\x00", t),
        "TYPE_MISMATCH": lambda: d.pipe(NAMES.inbound("vote"), b"k", encode_envelope(good), t),
        "MISSING_FIELD": lambda: pipe_env(d, c.build("episode", episode()).model_copy(update={"trace_id": ""})),
        "BAD_SIGNATURE": lambda: pipe_env(d, good.model_copy(update={"signature": b"x" * 32})),
        "CLOCK_SKEW": lambda: pipe_env(d, c.build("episode", episode(), timestamp_ms=t - 600_000), log_time=t),
        "UNKNOWN_TENANT": lambda: pipe_env(d, good.model_copy(update={"tenant": "nobody"})),
        "UNKNOWN_KEY": lambda: pipe_env(d, good.model_copy(update={"key_id": "hmac:op9"})),
        "SELF_LOOP": lambda: pipe_env(d, good.model_copy(update={"claw_id": "hivemem-gate"})),
        "CLAW_SUSPENDED": lambda: pipe_env(d, offline_client(claw_id="claw-bad").build("episode", episode())),
        "GOVERNANCE_DISABLED": lambda: pipe_env(
            d, offline_client("globex").build("vote", {"proposalId": "p1", "vote": "YES"})
        ),
        "KEY_MISMATCH": lambda: pipe_env(d, c.build("episode", episode()), key=b"acme/elsewhere"),
    }
    for expected, run in cases.items():
        assert code_of(run()) == expected, expected


def test_signature_covers_the_payload() -> None:
    d = GateDriver(gate_config())
    env = offline_client().build("episode", episode())
    tampered = env.model_copy(update={"payload": env.payload.model_copy(update={"content": "changed"})})
    assert code_of(pipe_env(d, tampered)) == "BAD_SIGNATURE"


def test_idempotency_key_applies_once_and_replay_is_refused() -> None:
    d = GateDriver(gate_config())
    c = offline_client()
    body = episode()
    outs = [pipe_env(d, c.build("episode", body, idempotency_key="k1")) for _ in range(5)]
    assert [code_of(o) for o in outs] == ["ACCEPTED"] + ["DUPLICATE"] * 4
    once = c.build("episode", episode())
    assert [code_of(pipe_env(d, once)) for _ in range(2)] == ["ACCEPTED", "REPLAYED"]


def test_rejection_carries_trace_metadata_but_is_deterministic() -> None:
    d = GateDriver(gate_config())
    env = offline_client().build("episode", episode()).model_copy(update={"signature": b"bad"})
    first = decode_rejection(pipe_env(d, env).value)
    assert (first.trace_id, first.claw_id, first.tenant) == (env.trace_id, "claw-1", "acme")
    assert first.original == encode_envelope(env)
    assert len(first.event_id) == 36


def test_missing_field_written_by_an_old_client() -> None:
    """A writer whose record lacks instanceId content: strict validation names the field."""
    env = offline_client().build("episode", episode()).model_copy(update={"instance_id": ""})
    sv = registry().latest("episode")
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, sv.parsed, env.to_wire())
    data = encode_record(sv, env.to_wire())
    assert data.endswith(buf.getvalue())
    out = GateDriver(gate_config()).pipe(EPISODES, partition_key("acme", env.aggregate), data, env.timestamp)
    assert code_of(out) == "MISSING_FIELD"
    assert "instanceId" in decode_rejection(out.value).detail


# --- a property test against a plain reference model ----------------------------------------

keys = st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=25)


@settings(max_examples=60, deadline=None)
@given(keys, st.integers(min_value=1, max_value=7))
def test_gate_matches_reference_and_is_stable_on_reprocessing(idem_keys: list[str], cut: int) -> None:
    """Through the same GateCore the runtime uses, on in-memory stores: arbitrary batch
    boundaries give the reference verdicts, and a crash's re-delivery gives them again."""
    c = offline_client()
    envs = [c.build("episode", episode(), idempotency_key=k) for k in idem_keys]
    recs = [InboundRecord(LogPosition(EPISODES, 0, i), e.timestamp, partition_key("acme", e.aggregate),
                          encode_envelope(e)) for i, e in enumerate(envs)]  # fmt: skip
    # Reference: the first record of each key is accepted, the others are duplicates.
    seen: set[str] = set()
    expected = []
    for k in idem_keys:
        expected.append("ACCEPTED" if k not in seen else "DUPLICATE")
        seen.add(k)
    d = GateDriver(gate_config())
    got = []
    for start in range(0, len(recs), cut):  # arbitrary batch boundaries
        got += [code_of(o) for o in d.redeliver(recs[start : start + cut])]
    assert got == expected
    # A crash re-delivers everything: the same positions get the same verdicts and bytes.
    again = d.redeliver(recs)
    assert [code_of(o) for o in again] == expected
    assert [o.value for o in again] == [o.value for o in d.emitted[: len(recs)]]


def test_oversized_original_is_kept_as_a_bounded_slice_with_its_hash() -> None:
    import hashlib

    from governance.refusals import ORIGINAL_LIMIT

    d = GateDriver(gate_config())
    big = b"\xc3\x01" + b"\x00" * 8 + b"x" * 900_000  # unknown schema, just under Kafka's 1 MB
    rej = decode_rejection(d.pipe(EPISODES, b"k", big, now_ms()).value)
    assert rej.reason_code == "UNKNOWN_SCHEMA"
    assert rej.original == big[:ORIGINAL_LIMIT]
    assert (rej.original_size, rej.original_sha256) == (len(big), hashlib.sha256(big).hexdigest())


def test_type_mismatch_keeps_the_trace() -> None:
    d = GateDriver(gate_config())
    env = offline_client().build("episode", episode(), trace_id="t-mismatch")
    rej = decode_rejection(d.pipe(NAMES.inbound("vote"), b"k", encode_envelope(env), now_ms()).value)
    assert (rej.reason_code, rej.trace_id, rej.claw_id) == ("TYPE_MISMATCH", "t-mismatch", "claw-1")


def test_nul_and_oversized_header_fields_are_refused_with_bounded_rejections() -> None:
    d = GateDriver(gate_config())
    c = offline_client()
    nul = c.build("episode", episode()).model_copy(update={"idempotency_key": "k\x00ey"})
    huge = c.build("episode", episode()).model_copy(update={"trace_id": "t" * 500_000})
    for env in (nul, huge):
        rej = decode_rejection(pipe_env(d, env).value)
        assert rej.reason_code == "INVALID_FIELD"
        assert "\x00" not in (rej.idempotency_key or "") and len(rej.trace_id or "") <= 256


def test_accepted_governance_inputs_go_to_their_tenants_partition() -> None:
    """Presence, proposals and votes are written to the tenant's partition (the governance processor splits by
    tenant); every other accepted envelope, and every refusal, keeps the partition it was read from."""
    d = GateDriver(gate_config())
    c = offline_client()
    home = tenant_partition("acme")
    other = (home + 1) % DEFAULT_PARTITIONS
    t = now_ms()
    for kind, body in (("presence", {"status": "ACTIVE"}), ("vote", {"proposalId": "p1", "vote": "YES"}),
                       ("proposal", {"proposalId": "p2", "factKey": "k", "statement": "s", "proposer": "claw-1",
                                     "deadline": t + 60_000})):  # fmt: skip
        env = c.build(kind, body)
        out = d.pipe(NAMES.inbound(kind), partition_key("acme", env.aggregate), encode_envelope(env), t, other)
        assert (out.topic, out.partition) == (NAMES.accepted(kind), home)
        assert dict(out.headers)["hm-src"].decode().startswith(f"{NAMES.inbound(kind)}:{other}:")
    env = c.build("episode", episode())
    out = d.pipe(EPISODES, partition_key("acme", env.aggregate), encode_envelope(env), t, other)
    assert (out.topic, out.partition) == (NAMES.accepted("episode"), other)
    bad = d.pipe(NAMES.inbound("vote"), b"acme/p1", b"\x00garbage", t, other)
    assert (bad.topic, bad.partition) == (NAMES.rejected, other)


def test_accepted_episodes_and_erasures_go_to_their_memorys_partition() -> None:
    """A memory's episodes and erasures (tenant, claw, user) share a partition of each accepted topic, whichever
    partition each was read from: the kmms processor splits by memory."""
    d = GateDriver(gate_config())
    c = offline_client()
    t = now_ms()
    for user in ("ana", "bo", "cy", ""):
        home = memory_partition("acme", c.claw_id, user)
        bodies: list[tuple[str, dict[str, object]]] = [
            ("episode", {**episode(), "userId": user}),
            ("erasure", {"erasureId": f"x-{user}", "about": "memory", "userId": user})]  # fmt: skip
        for i, (kind, body) in enumerate(bodies):
            env = c.build(kind, body)
            out = d.pipe(NAMES.inbound(kind), partition_key("acme", env.aggregate), encode_envelope(env), t + i,
                         (home + 1 + i) % DEFAULT_PARTITIONS)  # fmt: skip
            assert (out.topic, out.partition) == (NAMES.accepted(kind), home), (kind, user)
