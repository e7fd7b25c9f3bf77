"""One contract suite for every ClaimStore backend (in-memory here; Postgres in integration)."""

from governance.gate.checks import REPLAY_WINDOW_MS, Claim, Position
from processors.gate.claim_store import ClaimStore, InMemoryClaimStore


def check_claim_store_contract(store: ClaimStore, prefix: str) -> None:
    a, b = Claim("idem", f"{prefix}-a"), Claim("replay", f"{prefix}-b")
    p1, p2 = Position("t", 0, 1), Position("t", 1, 7)
    assert store.claim({a: p1}, 1_000) == {a: p1}
    # Another position cannot take an owned claim; the owner re-claiming keeps it.
    assert store.claim({a: p2, b: p2}, 1_000) == {a: p1, b: p2}
    assert store.claim({a: p1}, 1_000) == {a: p1}
    assert store.claim({}, 1_000) == {}
    # Replay claims expire after the window; idempotency claims never do.
    assert store.prune(1_000 + REPLAY_WINDOW_MS + 1) >= 1
    assert store.claim({a: p2, b: p1}, 2_000) == {a: p1, b: p1}


def test_in_memory_claim_store() -> None:
    check_claim_store_contract(InMemoryClaimStore(), "mem")
