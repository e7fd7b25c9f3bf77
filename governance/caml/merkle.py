"""Merkle tree over the audit log, RFC 6962 / RFC 9162 style.

* Leaf hash ``SHA-256(0x00 ‖ leaf bytes)``, node hash ``SHA-256(0x01 ‖ left ‖ right)``; the
  domain separation stops a node from passing as a leaf (second-preimage).
* Tree shape is RFC 6962's MTH: split at the largest power of two below n. It is computed bottom
  up — pair neighbours, carry a lone last node up unchanged — which builds the same tree in O(n)
  time without slicing. The empty tree's root is ``SHA-256(b"")``.
* Inclusion proofs are RFC 6962 §2.1.1 audit paths (sibling hashes from the leaf up) and are
  verified with the RFC 9162 §2.1.3.2 algorithm, which also checks that the path length fits
  ``size``. Every hash is 32 bytes; anything else fails verification.
* Leaf bytes are ``canonical_json`` of an audit entry: sorted keys, no spaces, UTF-8, and no NaN
  or infinity (``ValueError``). Tuples serialize as lists.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

HASH_LEN = 32
_LEAF, _NODE = b"\x00", b"\x01"
EMPTY_ROOT: bytes = hashlib.sha256(b"").digest()


def canonical_json(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(_LEAF + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(_NODE + left + right).digest()


def _parent_level(level: Sequence[bytes]) -> list[bytes]:
    sha = hashlib.sha256
    n = len(level)
    up = [sha(_NODE + level[i] + level[i + 1]).digest() for i in range(0, n - 1, 2)]
    if n % 2:
        up.append(level[-1])  # the lone last node moves up unchanged (RFC 6962 split)
    return up


def tree_levels(leaf_hashes: Sequence[bytes]) -> list[list[bytes]]:
    """Every level from the leaves (``[0]``) to the root (``[-1]``, one hash); ``[[]]`` if empty.
    Build once to cut many proofs with ``proof_from_levels`` in O(log n) each."""
    levels = [list(leaf_hashes)]
    while len(levels[-1]) > 1:
        levels.append(_parent_level(levels[-1]))
    return levels


def root(leaf_hashes: Sequence[bytes]) -> bytes:
    """MTH of the leaf hashes, O(n) time, O(n) extra memory for the first level only."""
    if not leaf_hashes:
        return EMPTY_ROOT
    level: Sequence[bytes] = leaf_hashes
    while len(level) > 1:
        level = _parent_level(level)
    return level[0]


def proof_from_levels(levels: Sequence[Sequence[bytes]], index: int) -> list[bytes]:
    n = len(levels[0])
    if not 0 <= index < n:
        raise IndexError(f"leaf index {index} out of range for a tree of {n}")
    path: list[bytes] = []
    for level in levels[:-1]:
        sibling = index ^ 1
        if sibling < len(level):  # else: lone last node, carried up with no hash on the path
            path.append(level[sibling])
        index >>= 1
    return path


def inclusion_proof(leaf_hashes: Sequence[bytes], index: int) -> list[bytes]:
    """RFC 6962 PATH(index, D[n]): sibling hashes, deepest first. ``IndexError`` if out of range."""
    if not 0 <= index < len(leaf_hashes):
        raise IndexError(f"leaf index {index} out of range for a tree of {len(leaf_hashes)}")
    return proof_from_levels(tree_levels(leaf_hashes), index)


def verify_inclusion(leaf: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes) -> bool:
    """RFC 9162 §2.1.3.2: does ``leaf`` (a leaf HASH) sit at ``index`` of the tree of ``size``
    leaves with this ``root``?"""
    if not 0 <= index < size or len(leaf) != HASH_LEN or len(root) != HASH_LEN:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0 or len(p) != HASH_LEN:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:  # skip levels where this node was carried up alone
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and hmac.compare_digest(r, root)


@dataclass(frozen=True)
class LeafDiff:
    altered: list[int] = field(default_factory=list)  # same index, different hash
    missing: list[int] = field(default_factory=list)  # expected, absent from actual
    extra: list[int] = field(default_factory=list)  # in actual beyond expected

    @property
    def ok(self) -> bool:
        return not (self.altered or self.missing or self.extra)


def diff_leaves(expected: Sequence[bytes], actual: Sequence[bytes]) -> LeafDiff:
    """Index-by-index comparison of two leaf-hash sequences (e.g. recomputed vs. recorded)."""
    common = min(len(expected), len(actual))
    return LeafDiff(
        altered=[i for i in range(common) if expected[i] != actual[i]],
        missing=list(range(common, len(expected))),
        extra=list(range(common, len(actual))),
    )
