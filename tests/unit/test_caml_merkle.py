"""CAML audit Merkle tree against a straight RFC 6962 reference; proofs; tamper detection."""

from __future__ import annotations

import hashlib
import math

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from governance.caml.merkle import (
    EMPTY_ROOT,
    LeafDiff,
    canonical_json,
    diff_leaves,
    inclusion_proof,
    leaf_hash,
    node_hash,
    proof_from_levels,
    root,
    tree_levels,
    verify_inclusion,
)

# --- the reference: RFC 6962 §2.1 written as the RFC writes it --------------------------------------


def ref_split(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k  # largest power of two < n


def ref_mth(d: list[bytes]) -> bytes:
    if not d:
        return hashlib.sha256(b"").digest()
    if len(d) == 1:
        return hashlib.sha256(b"\x00" + d[0]).digest()
    k = ref_split(len(d))
    return hashlib.sha256(b"\x01" + ref_mth(d[:k]) + ref_mth(d[k:])).digest()


def ref_path(m: int, d: list[bytes]) -> list[bytes]:
    if len(d) == 1:
        return []
    k = ref_split(len(d))
    if m < k:
        return [*ref_path(m, d[:k]), ref_mth(d[k:])]
    return [*ref_path(m - k, d[k:]), ref_mth(d[:k])]


def data(n: int) -> list[bytes]:
    return [canonical_json({"seq": i, "op": "write"}) for i in range(n)]


def hashes(n: int) -> list[bytes]:
    return [leaf_hash(x) for x in data(n)]


# --- hashing and shape --------------------------------------------------------------------------------


def test_hash_primitives() -> None:
    assert hashlib.sha256(b"").digest() == EMPTY_ROOT
    assert EMPTY_ROOT.hex() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert root([]) == EMPTY_ROOT
    assert leaf_hash(b"") == hashlib.sha256(b"\x00").digest()
    # RFC 6962 test vector: the empty leaf's hash.
    assert leaf_hash(b"").hex() == "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"
    a, b = leaf_hash(b"a"), leaf_hash(b"b")
    assert node_hash(a, b) == hashlib.sha256(b"\x01" + a + b).digest()
    assert node_hash(a, b) != node_hash(b, a)
    assert leaf_hash(a + b) != node_hash(a, b)  # domain separation


def test_explicit_shapes_for_small_trees() -> None:
    h = hashes(8)
    n = node_hash
    assert root(h[:1]) == h[0]
    assert root(h[:2]) == n(h[0], h[1])
    assert root(h[:3]) == n(n(h[0], h[1]), h[2])
    assert root(h[:5]) == n(n(n(h[0], h[1]), n(h[2], h[3])), h[4])
    assert root(h[:6]) == n(n(n(h[0], h[1]), n(h[2], h[3])), n(h[4], h[5]))
    assert root(h[:7]) == n(n(n(h[0], h[1]), n(h[2], h[3])), n(n(h[4], h[5]), h[6]))


@pytest.mark.parametrize("n", range(1, 9))
def test_root_and_paths_match_reference_1_to_8(n: int) -> None:
    d = data(n)
    assert root([leaf_hash(x) for x in d]) == ref_mth(d)
    for m in range(n):
        assert inclusion_proof([leaf_hash(x) for x in d], m) == ref_path(m, d)


@pytest.mark.parametrize("n", [9, 15, 16, 17, 31, 32, 33, 100, 127, 128, 129, 1000])
def test_root_matches_reference_larger(n: int) -> None:
    d = data(n)
    assert root([leaf_hash(x) for x in d]) == ref_mth(d)
    levels = tree_levels([leaf_hash(x) for x in d])
    assert levels[-1] == [ref_mth(d)]
    for m in {0, 1, n // 2, n - 2, n - 1}:
        assert proof_from_levels(levels, m) == ref_path(m, d)


@pytest.mark.parametrize("n", range(1, 34))
def test_every_proof_verifies_1_to_33(n: int) -> None:
    h = hashes(n)
    r = root(h)
    levels = tree_levels(h)
    for i in range(n):
        proof = inclusion_proof(h, i)
        assert proof == proof_from_levels(levels, i)
        assert len(proof) <= math.ceil(math.log2(n)) if n > 1 else proof == []
        assert verify_inclusion(h[i], i, n, proof, r)
        # wrong position, wrong leaf, truncated or padded proof: all fail. (A wrong size can verify when
        # the path has the same shape in both trees: RFC 9162 checks the path fits the size, no more.)
        if n > 1:
            assert not verify_inclusion(h[i], (i + 1) % n, n, proof, r)
            assert not verify_inclusion(h[(i + 1) % n], i, n, proof, r)
        if proof:
            assert not verify_inclusion(h[i], i, n, proof[:-1], r)
        assert not verify_inclusion(h[i], i, n, [*proof, h[0]], r)


def test_out_of_range() -> None:
    h = hashes(4)
    for i in (-1, 4):
        with pytest.raises(IndexError):
            inclusion_proof(h, i)
    with pytest.raises(IndexError):
        inclusion_proof([], 0)
    r = root(h)
    proof = inclusion_proof(h, 0)
    assert not verify_inclusion(h[0], 4, 4, proof, r)
    assert not verify_inclusion(h[0], -1, 4, proof, r)
    assert not verify_inclusion(h[0], 0, 0, [], EMPTY_ROOT)
    assert not verify_inclusion(h[0][:31], 0, 4, proof, r)  # hashes are 32 bytes
    assert not verify_inclusion(h[0], 0, 4, [p + b"\x00" for p in proof], r)


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(1, 70),
    seed=st.binary(min_size=1, max_size=8),
    pick=st.integers(0, 10**6),
    target=st.sampled_from(["leaf", "proof", "root"]),
    pos=st.integers(0, 31),
    mask=st.integers(1, 255),
)
def test_flipping_any_byte_breaks_verification(
    n: int, seed: bytes, pick: int, target: str, pos: int, mask: int
) -> None:
    h = [leaf_hash(seed + i.to_bytes(4, "big")) for i in range(n)]
    i = pick % n
    leaf, proof, r = h[i], inclusion_proof(h, i), root(h)
    assert verify_inclusion(leaf, i, n, proof, r)

    def flip(b: bytes) -> bytes:
        return b[:pos] + bytes([b[pos] ^ mask]) + b[pos + 1 :]

    if target == "proof" and proof:
        j = pick % len(proof)
        proof = [*proof[:j], flip(proof[j]), *proof[j + 1 :]]
    elif target == "root":
        r = flip(r)
    else:
        leaf = flip(leaf)
    assert not verify_inclusion(leaf, i, n, proof, r)


# --- canonical JSON and diffs ---------------------------------------------------------------------


def test_canonical_json() -> None:
    assert (
        canonical_json({"b": 1, "a": [1, 2.5, None, True], "é": "ü"})
        == '{"a":[1,2.5,null,true],"b":1,"é":"ü"}'.encode()
    )
    assert canonical_json({"z": {"y": 1, "x": 2}}) == b'{"z":{"x":2,"y":1}}'
    assert canonical_json((1, "a")) == b'[1,"a"]'
    for bad in (math.nan, math.inf, -math.inf, {"x": [math.nan]}):
        with pytest.raises(ValueError):
            canonical_json(bad)
    with pytest.raises(TypeError):
        canonical_json({"x": b"bytes"})


def test_canonical_json_is_order_independent() -> None:
    assert canonical_json({"a": 1, "b": 2}) == canonical_json({"b": 2, "a": 1})


def test_diff_leaves() -> None:
    h = hashes(6)
    assert diff_leaves(h, h) == LeafDiff() and diff_leaves(h, h).ok
    tampered = [h[0], h[2], h[2], h[3]]
    d = diff_leaves(h, tampered)
    assert (d.altered, d.missing, d.extra, d.ok) == ([1], [4, 5], [], False)
    d = diff_leaves(h[:3], h)
    assert (d.altered, d.missing, d.extra) == ([], [], [3, 4, 5])
