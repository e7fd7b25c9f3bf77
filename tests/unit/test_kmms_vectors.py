"""The fold's vector reader (contracts/kmms_vectors.py) against fastavro, on every kmms_embedding version."""

from __future__ import annotations

import io
import struct

import fastavro
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.avro import HEADER_LEN, ContractError, encode_record, registry
from contracts.kmms_records import KmmsEmbedding, decode_kmms, encode_kmms
from contracts.kmms_vectors import decode_vector_record

FLOATS = st.floats(width=32, allow_nan=False)
TEXT = st.text(max_size=40)


def _versions() -> list[int]:
    return [sv.version for sv in registry().versions("kmms_embedding")]


@settings(max_examples=200, deadline=None)
@given(version=st.sampled_from(_versions()), vector=st.lists(FLOATS, max_size=400), unit=TEXT, tenant=TEXT,
       claw=TEXT, scope=TEXT, model=TEXT, source=TEXT, voice=TEXT, tokens=st.binary(max_size=600))  # fmt: skip
def test_equal_to_fastavro(version: int, vector: list[float], unit: str, tenant: str, claw: str, scope: str,
                           model: str, source: str, voice: str, tokens: bytes) -> None:  # fmt: skip
    sv = next(v for v in registry().versions("kmms_embedding") if v.version == version)
    record = {"unitId": unit, "tenant": tenant, "clawId": claw, "scope": scope, "model": model, "vector": vector,
              "source": source, "voice": voice, "tokens": tokens}  # fmt: skip
    names = {f["name"] for f in sv.parsed["fields"]}
    data = encode_record(sv, {k: v for k, v in record.items() if k in names})
    slow = decode_kmms(data, KmmsEmbedding)
    fast = decode_vector_record(data)
    assert (fast.unit_id, fast.tenant, fast.claw_id, fast.scope, fast.model, fast.source, fast.voice) == (
        slow.unit_id, slow.tenant, slow.claw_id, slow.scope, slow.model, slow.source, slow.voice)  # fmt: skip
    assert fast.tokens == slow.tokens
    assert fast.vector.dtype == np.float32
    assert fast.vector.tolist() == slow.vector


def _long(n: int) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, "long", n)
    return buf.getvalue()


def test_blocks_with_sizes_and_several_blocks() -> None:
    """Avro lets a writer split an array into blocks and give a block's size in bytes (negative count)."""
    e = KmmsEmbedding(unit_id="u#0", tenant="t", claw_id="c", scope="s", model="m", vector=[0.5, -1.0, 2.0],
                      source="x:0:1", voice="told")  # fmt: skip
    data = encode_kmms(e)
    sv = registry().latest("kmms_embedding")
    head = data[:HEADER_LEN] + b"".join(_long(len(x)) + x.encode() for x in ("u#0", "t", "c", "s", "m"))
    tail = b"".join(_long(len(x)) + x.encode() for x in ("x:0:1", "told")) + _long(0)  # no tokens
    blocks = _long(-2) + _long(8) + struct.pack("<2f", 0.5, -1.0) + _long(1) + struct.pack("<f", 2.0) + _long(0)
    split = head + blocks + tail
    read = fastavro.schemaless_reader(io.BytesIO(split[HEADER_LEN:]), sv.parsed, None)
    assert isinstance(read, dict) and read["vector"] == e.vector
    assert decode_vector_record(split).vector.tolist() == e.vector


@pytest.mark.parametrize("cut", [1, 5, 11, 40, 200])
def test_truncated_or_trailing_bytes_refused(cut: int) -> None:
    data = encode_kmms(KmmsEmbedding(unit_id="u#0", tenant="t", claw_id="c", scope="s", model="m",
                                     vector=[0.25] * 384, source="x:0:1"))  # fmt: skip
    with pytest.raises(ContractError) as err:
        decode_vector_record(data[:-cut])
    assert err.value.code == "MALFORMED"
    with pytest.raises(ContractError):
        decode_vector_record(data + b"\x00")


def test_another_family_refused() -> None:
    other = registry().latest("kmms_event")
    data = other.fingerprint  # any body: the family is checked first
    with pytest.raises(ContractError) as err:
        decode_vector_record(b"\xc3\x01" + data + b"\x00")
    assert err.value.code in {"TYPE_MISMATCH", "MALFORMED"}
