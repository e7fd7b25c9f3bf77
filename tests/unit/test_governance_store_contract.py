"""One contract suite for every GovernanceStore backend (in-memory here; Postgres in
integration), and the governance processor driven without a broker."""

from __future__ import annotations

from contracts.avro import decode_envelope, decode_rejection, encode_envelope
from contracts.topics import TopicNames
from governance.signing import HmacSigner
from governance.votes.voting import GovernanceState
from processors.votes.core import GovernanceDriver
from processors.votes.store import GovernanceStore, InMemoryGovernanceStore
from tests.helpers import offline_client
from tests.unit.test_voting import CFG, beat, propose, vote

NAMES = TopicNames()
SIGNER = HmacSigner("hmac:hivemem-system", b"k" * 32)


def check_governance_store_contract(store: GovernanceStore, tenant_claw: str) -> None:
    """``tenant_claw`` keeps runs apart on a shared database (claw and proposal ids)."""
    gs = store.load(CFG)
    for i, claw in enumerate(("a", "b", "c")):
        beat(gs, f"{tenant_claw}-{claw}", 1_000 + i)
    beat(gs, f"{tenant_claw}-d", 100)  # d's history has two runs (healthy, then not), kept whole
    beat(gs, f"{tenant_claw}-d", 1_003, healthy=False)
    pid = f"{tenant_claw}-p1"
    propose(gs, pid, 2_000, key=f"{tenant_claw}/k")
    vote(gs, f"{tenant_claw}-a", pid, 2_100)
    vote(gs, f"{tenant_claw}-b", pid, 2_200)  # 2 of 3: approved, fact v1
    assert gs.dirty_proposals and gs.dirty_presence and gs.dirty_facts
    store.save(gs)
    assert not (gs.dirty_proposals or gs.dirty_presence or gs.dirty_facts)  # save clears the marks
    again = store.load(CFG)
    key = ("acme", pid)
    assert again.proposals[key] == gs.proposals[key]
    assert again.facts[("acme", f"{tenant_claw}/k")] == 1
    assert len(gs.presence["acme"][f"{tenant_claw}-d"].runs) == 2
    assert {c: again.presence["acme"][c] for c in gs.presence["acme"] if c.startswith(tenant_claw)} == {
        c: hb for c, hb in gs.presence["acme"].items() if c.startswith(tenant_claw)
    }
    # An instance of a split processor loads its own tenants only.
    assert key in store.load(CFG, owns=lambda t: t == "acme").proposals
    none = store.load(CFG, owns=lambda t: t != "acme")
    assert key not in none.proposals and "acme" not in none.presence and ("acme", f"{tenant_claw}/k") not in none.facts
    # Only what is marked dirty is written: an unsaved change is not there after a load.
    vote(gs, f"{tenant_claw}-c", pid, 2_300)
    gs.clear_dirty()
    store.save(gs)
    assert store.load(CFG).proposals[key] == again.proposals[key]


def test_in_memory_governance_store() -> None:
    check_governance_store_contract(InMemoryGovernanceStore(), "mem")


def test_governance_driver_decides_once_and_survives_a_restart() -> None:
    d = GovernanceDriver(CFG, NAMES, SIGNER)
    t = 1_000

    def pipe(claw: str, kind: str, body: dict[str, object], at: int) -> list[str]:
        env = offline_client("acme", claw).build(kind, body, timestamp_ms=at)
        outs = d.pipe(NAMES.accepted(kind), encode_envelope(env), at, now_ms=at)
        return [decode_rejection(o.value).reason_code if o.topic == NAMES.rejected else decode_envelope(o.value).type
                for o in outs]  # fmt: skip

    for claw in ("a", "b", "c"):
        assert pipe(claw, "presence", {"status": "ACTIVE"}, t) == []
    body = {"proposalId": "p", "factKey": "k", "statement": "s", "proposer": "a", "deadline": t + 60_000}
    assert pipe("a", "proposal", body, t + 1) == []
    assert pipe("a", "vote", {"proposalId": "p", "vote": "YES"}, t + 2) == []
    d.restart()  # state comes back from the store
    assert pipe("a", "vote", {"proposalId": "p", "vote": "YES"}, t + 3) == ["DUPLICATE_VOTE"]
    assert pipe("b", "vote", {"proposalId": "p", "vote": "YES"}, t + 4) == ["decision", "fact"]
    assert pipe("c", "vote", {"proposalId": "p", "vote": "YES"}, t + 5) == ["PROPOSAL_CLOSED"]
    assert isinstance(d.processor.state, GovernanceState)
