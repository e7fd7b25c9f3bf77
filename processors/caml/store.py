"""The caml processor's durable state: deployments (reputation, suspension), observations
(counts, active, promoted), validations, the operators' rate windows and the PII hash cache.

As for governance: one interface, an in-memory backend (the driver, pure tests) and a
Postgres backend (schema ``camlproc``, migration 11) writing on the runtime's connection, so
a batch's state, outputs and input offsets commit together; one contract suite runs against
both (tests/unit/test_caml_store_contract.py).
"""

from __future__ import annotations

import copy
from typing import Protocol

import psycopg

from governance.caml import rate_limit
from governance.caml.engine import CamlState, Deployment, ObservationState
from governance.caml.reputation import ReputationConfig


class CamlStore(Protocol):
    def load(self, cfg: ReputationConfig) -> CamlState:
        """The state as last saved (nothing dirty)."""
        ...

    def save(self, st: CamlState) -> None:
        """Write what ``st`` marks dirty, then clear the marks."""
        ...


class InMemoryCamlStore:
    def __init__(self) -> None:
        self._saved = CamlState()

    def load(self, cfg: ReputationConfig) -> CamlState:
        st = copy.deepcopy(self._saved)
        st.cfg = cfg
        st.clear_dirty()
        return st

    def save(self, st: CamlState) -> None:
        saved = self._saved
        for dk in st.dirty_deployments:
            saved.deployments[dk] = copy.deepcopy(st.deployments[dk])
        for ok in st.dirty_observations:
            saved.observations[ok] = copy.deepcopy(st.observations[ok])
        saved.validations.update(st.new_validations)
        for tenant, at in st.new_attempts:
            saved.rate.setdefault(tenant, []).append(at)
        for k in st.dirty_pii_cache:
            saved.pii_cache[k] = st.pii_cache[k]
        st.clear_dirty()


_DEP_COLS = "tenant, claw_id, score, seq, suspended, accepted_ms, pii_ms, last_bonus_ms, pii_floor_ms"
_OBS_COLS = "observation_id, tenant, claw_id, kind, created_ms, validations, refutations, active, promoted"


PRUNE_EVERY = 500  # saves between prunes of rate attempts that left the window


class PostgresCamlStore:
    def __init__(self, conn: psycopg.Connection[tuple[object, ...]]) -> None:
        self._conn = conn
        self._saves = 0

    def load(self, cfg: ReputationConfig) -> CamlState:
        st = CamlState(cfg)
        c = self._conn
        for row in c.execute(f"SELECT {_DEP_COLS} FROM camlproc.deployments"):
            t, claw, score, seq, susp, acc, pii, bonus, floor = row
            st.deployments[(str(t), str(claw))] = Deployment(
                str(t), str(claw), float(str(score)), int(str(seq)), bool(susp), list(acc or []),  # type: ignore[call-overload]
                list(pii or []), None if bonus is None else int(str(bonus)), int(str(floor)),  # type: ignore[call-overload]
            )  # fmt: skip
        for row in c.execute(f"SELECT {_OBS_COLS} FROM camlproc.observations"):
            oid, t, claw, kind, created, v, f, active, promoted = row
            st.observations[str(oid)] = ObservationState(
                str(oid),
                str(t),
                str(claw),
                str(kind),
                int(str(created)),
                int(str(v)),
                int(str(f)),
                bool(active),
                bool(promoted),
            )
        for oid, t, claw in c.execute("SELECT observation_id, tenant, claw_id FROM camlproc.validations"):
            st.validations.add((str(oid), str(t), str(claw)))
        # Only the last hour counts; older attempts are pruned as the window moves.
        latest = c.execute("SELECT max(at_ms) FROM camlproc.rate_attempts").fetchone()
        if latest is not None and latest[0] is not None:
            since = int(str(latest[0])) - rate_limit.WINDOW_MS
            c.execute("DELETE FROM camlproc.rate_attempts WHERE at_ms <= %s", (since,))
        for t, at in c.execute("SELECT tenant, at_ms FROM camlproc.rate_attempts ORDER BY at_ms, id"):
            st.rate.setdefault(str(t), []).append(int(str(at)))
        for t, sha, until in c.execute("SELECT tenant, sha256, until_ms FROM camlproc.pii_cache"):
            st.pii_cache[(str(t), str(sha))] = int(str(until))
        st.clear_dirty()
        return st

    def save(self, st: CamlState) -> None:
        with self._conn.cursor() as cur:
            if st.dirty_deployments:
                rows = [st.deployments[k] for k in sorted(st.dirty_deployments)]
                cur.executemany(
                    f"INSERT INTO camlproc.deployments ({_DEP_COLS}) VALUES ({', '.join(['%s'] * 9)}) "
                    "ON CONFLICT (tenant, claw_id) DO UPDATE SET score = excluded.score, seq = excluded.seq, "
                    "suspended = excluded.suspended, accepted_ms = excluded.accepted_ms, pii_ms = excluded.pii_ms, "
                    "last_bonus_ms = excluded.last_bonus_ms, pii_floor_ms = excluded.pii_floor_ms",
                    [
                        (
                            d.tenant,
                            d.claw,
                            d.score,
                            d.seq,
                            d.suspended,
                            d.accepted_ms,
                            d.pii_ms,
                            d.last_bonus_ms,
                            d.pii_floor_ms,
                        )
                        for d in rows
                    ],
                )
            if st.dirty_observations:
                obs = [st.observations[k] for k in sorted(st.dirty_observations)]
                cur.executemany(
                    f"INSERT INTO camlproc.observations ({_OBS_COLS}) VALUES ({', '.join(['%s'] * 9)}) "
                    "ON CONFLICT (observation_id) DO UPDATE SET kind = excluded.kind, "
                    "validations = excluded.validations, refutations = excluded.refutations, "
                    "active = excluded.active, promoted = excluded.promoted",
                    [
                        (
                            o.observation_id,
                            o.tenant,
                            o.claw,
                            o.kind,
                            o.created_ms,
                            o.validations,
                            o.refutations,
                            o.active,
                            o.promoted,
                        )
                        for o in obs
                    ],
                )
            if st.new_validations:
                cur.executemany(
                    "INSERT INTO camlproc.validations (observation_id, tenant, claw_id) VALUES (%s, %s, %s) "
                    "ON CONFLICT DO NOTHING",
                    st.new_validations,
                )
            if st.new_attempts:
                cur.executemany("INSERT INTO camlproc.rate_attempts (tenant, at_ms) VALUES (%s, %s)", st.new_attempts)
                self._saves += 1
                if self._saves % PRUNE_EVERY == 0:
                    newest = max(at for _, at in st.new_attempts)
                    cur.execute("DELETE FROM camlproc.rate_attempts WHERE at_ms <= %s",
                                (newest - rate_limit.WINDOW_MS,))  # fmt: skip
            if st.dirty_pii_cache:
                cur.executemany(
                    "INSERT INTO camlproc.pii_cache (tenant, sha256, until_ms) VALUES (%s, %s, %s) "
                    "ON CONFLICT (tenant, sha256) DO UPDATE SET until_ms = excluded.until_ms",
                    [(t, sha, st.pii_cache[(t, sha)]) for t, sha in sorted(st.dirty_pii_cache)],
                )
        st.clear_dirty()
