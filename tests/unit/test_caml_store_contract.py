"""One contract for the caml processor's stores: what is saved is what loads (in memory here,
on Postgres in tests/integration/test_faults.py)."""

from __future__ import annotations

import time

from governance.caml.engine import Deployment, ObservationState
from governance.caml.reputation import ReputationConfig
from processors.caml.store import CamlStore, InMemoryCamlStore


def check_caml_store_contract(store: CamlStore, tag: str) -> None:
    cfg = ReputationConfig()
    st = store.load(cfg)
    dep = st.deployment(f"t-{tag}", "claw")
    dep.score, dep.seq, dep.suspended = 12.5, 3, True
    dep.accepted_ms, dep.pii_ms, dep.last_bonus_ms, dep.pii_floor_ms = [1, 2], [3], 4, 5
    st.observations[f"o-{tag}"] = ObservationState(f"o-{tag}", f"t-{tag}", "claw", "ANOMALY_DETECTED", 10, 2, 1,
                                                    False, True)  # fmt: skip
    st.dirty_observations.add(f"o-{tag}")
    st.validations.add((f"o-{tag}", "t2", "v"))
    st.new_validations.append((f"o-{tag}", "t2", "v"))
    now = int(time.time() * 1000)  # recent: a store prunes attempts that left the last hour
    st.rate[f"t-{tag}"] = [now - 200, now - 100]
    st.new_attempts += [(f"t-{tag}", now - 200), (f"t-{tag}", now - 100)]
    st.pii_cache[(f"t-{tag}", "ab")] = 999
    st.dirty_pii_cache.add((f"t-{tag}", "ab"))
    store.save(st)
    assert not st.dirty_deployments and not st.new_attempts  # marks cleared

    again = store.load(cfg)
    assert again.deployments[(f"t-{tag}", "claw")] == Deployment(f"t-{tag}", "claw", 12.5, 3, True, [1, 2], [3], 4, 5)
    assert again.observations[f"o-{tag}"] == st.observations[f"o-{tag}"]
    assert (f"o-{tag}", "t2", "v") in again.validations
    assert again.rate[f"t-{tag}"] == [now - 200, now - 100]
    assert again.pii_cache[(f"t-{tag}", "ab")] == 999
    # An update of a saved row replaces it; nothing is doubled.
    again.deployment(f"t-{tag}", "claw").score = 20.0
    again.dirty_deployments.add((f"t-{tag}", "claw"))
    again.new_validations.append((f"o-{tag}", "t2", "v"))
    store.save(again)
    third = store.load(cfg)
    assert third.deployments[(f"t-{tag}", "claw")].score == 20.0
    assert sorted(v for v in third.validations if v[0] == f"o-{tag}") == [(f"o-{tag}", "t2", "v")]


def test_in_memory_caml_store_meets_the_contract() -> None:
    check_caml_store_contract(InMemoryCamlStore(), "mem")
