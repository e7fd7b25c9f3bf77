import copy
import io

import fastavro
import pytest

from contracts.avro import ContractError, decode_envelope, decode_record, encode_envelope, make_version, registry
from contracts.compat import backward_problems, transitive_problems
from contracts.models import Envelope
from tests.helpers import episode, offline_client


def test_every_family_is_backward_transitively_compatible() -> None:
    problems = transitive_problems(registry())
    assert set(problems) >= {
        "proposal",
        "vote",
        "decision",
        "fact",
        "presence",
        "capabilities",
        "observation",
        "validation",
        "episode",
        "trace",
        "rejected",
    }
    assert problems == {family: [] for family in problems}
    assert len(registry().versions("presence")) == 2  # an evolution is really checked


def test_incompatible_change_is_caught() -> None:
    v1 = registry().versions("presence")[0].raw
    broken = copy.deepcopy(v1)
    broken["fields"][-1]["type"]["fields"].append({"name": "region", "type": "string"})  # no default
    assert any("region: added without a default" in p for p in backward_problems(broken, v1))
    narrowed = copy.deepcopy(v1)
    narrowed["fields"][4]["type"] = "int"  # timestamp long -> int
    assert backward_problems(narrowed, v1)


def test_envelope_roundtrip_through_single_object_encoding() -> None:
    env = offline_client().build("episode", episode())
    data = encode_envelope(env)
    assert data[:2] == b"\xc3\x01" and registry().by_fingerprint(data[2:10]) is not None
    assert decode_envelope(data) == env


def test_old_writer_version_is_read_with_the_latest_schema() -> None:
    v1 = registry().versions("presence")[0]
    env = offline_client().build("presence", {"status": "ACTIVE", "healthy": True})
    record = env.model_copy(update={"schema_version": 1}).to_wire()
    del record["payload"]["agentVersion"]
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, v1.parsed, record)
    decoded = decode_envelope(b"\xc3\x01" + v1.fingerprint + buf.getvalue())
    assert decoded.payload.agent_version == ""  # type: ignore[union-attr]
    assert decoded.schema_version == 1


@pytest.mark.parametrize(
    ("data", "code"),
    [(b"", "MALFORMED"), (b"hello world, not avro", "MALFORMED"), (b"\xc3\x01" + b"\x00" * 8 + b"x", "UNKNOWN_SCHEMA")],
)
def test_bad_bytes_have_reason_codes(data: bytes, code: str) -> None:
    with pytest.raises(ContractError) as err:
        decode_record(data)
    assert err.value.code == code


def test_truncated_body_is_malformed() -> None:
    data = encode_envelope(offline_client().build("episode", episode()))
    with pytest.raises(ContractError) as err:
        decode_record(data[:-5])
    assert err.value.code == "MALFORMED"


def test_payload_must_match_type() -> None:
    env = offline_client().build("episode", episode())
    with pytest.raises(ValueError):
        Envelope.model_validate({**env.model_dump(), "type": "vote"})


def test_fingerprint_is_little_endian_crc64() -> None:
    sv = make_version("x", 1, {"type": "record", "name": "X", "fields": []})
    assert sv.fingerprint == bytes.fromhex(
        fastavro.schema.fingerprint('{"name":"X","type":"record","fields":[]}', "CRC-64-AVRO")
    )
