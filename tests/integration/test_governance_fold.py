"""The governance read model's fold on real Postgres. Votes behind the gate are folded from their decoded
fields. Facts: a batch's facts are checked in log order against the stored versions and the ones before them
in the batch, written together, and a bad version fails the batch (the runtime then redoes it record by
record and refuses that fact alone)."""

from __future__ import annotations

import uuid

import pytest

from contracts.avro import encode_envelope
from contracts.models import FactPayload
from contracts.positions import LogPosition
from contracts.topics import TopicNames
from governance.signing import HmacSigner, encode_signed
from governance.votes.voting import FactOut
from processors.votes.core import GovernanceCore
from projections.votes.read_model import FactIntegrityError, GovernanceProjection
from streams.records import LOG_TIME_HEADER, SRC_HEADER, LogRecord
from tests.conftest import Stack
from tests.helpers import offline_client
from tests.integration.support import owner_db

NAMES = TopicNames()
SIGNER = HmacSigner("hmac:test", b"k" * 32)
CORE = GovernanceCore(NAMES, SIGNER)
_offset = iter(range(1_000_000))


def fact(key: str, version: int, valid_from: int, statement: str = "s", *, idem: str | None = None) -> LogRecord:
    """A fact as the governance processor writes it; another ``idem`` gives it another eventId (a second
    writer's version of the same number)."""
    payload = FactPayload(fact_key=key, version=version, statement=statement, supersedes_version=version - 1 or None,
                          valid_from=valid_from)  # fmt: skip
    out = CORE.encode(FactOut("acme", "t", payload))
    value = out.value
    if idem is not None:
        value = encode_signed(CORE._envelope("fact", "acme", "t", valid_from, idem, payload), SIGNER)
    return LogRecord(NAMES.inbound("fact"), out.partition, next(_offset), valid_from, out.key, value)


@pytest.fixture()
def schema(stack: Stack) -> str:
    name = f"gf_{uuid.uuid4().hex[:8]}"
    with owner_db(stack) as conn:
        for stmt in GovernanceProjection().ddl(name):
            conn.execute(stmt)
    return name


def fold(stack: Stack, schema: str, records: list[LogRecord]) -> None:
    """One batch, in one transaction, as the runtime runs it."""
    with owner_db(stack) as conn, conn.transaction(), conn.cursor() as cur:
        GovernanceProjection().fold(cur, schema, records)


def versions(stack: Stack, schema: str, key: str) -> list[tuple[object, ...]]:
    with owner_db(stack) as conn:
        return conn.execute(f"SELECT version, valid_from, valid_to, statement FROM {schema}.facts "
                            "WHERE tenant = 'acme' AND fact_key = %s ORDER BY version", (key,)).fetchall()  # fmt: skip


def test_a_batch_of_versions_is_chained_and_closed(stack: Stack, schema: str) -> None:
    v1, v2, v3 = fact("k", 1, 100, "one"), fact("k", 2, 200, "two"), fact("k", 3, 300, "three")
    other = fact("j", 1, 150)
    fold(stack, schema, [v1, other, v2])
    assert versions(stack, schema, "k") == [(1, 100, 200, "one"), (2, 200, None, "two")]
    # A later batch: a copy of a stored version is skipped, the next version closes the stored one.
    fold(stack, schema, [v2, v3, v1])
    assert versions(stack, schema, "k") == [(1, 100, 200, "one"), (2, 200, 300, "two"), (3, 300, None, "three")]
    assert versions(stack, schema, "j") == [(1, 150, None, "s")]


@pytest.mark.parametrize(
    ("batch", "code"),
    [
        (lambda: [fact("k", 1, 100), fact("k", 3, 300)], "FACT_CONFLICT"),  # a skipped version, in the batch
        (lambda: [fact("k", 1, 100), fact("k", 1, 100, "another text", idem="x")], "FACT_DUPLICATE_VERSION"),
        (lambda: [fact("k", 2, 200)], "FACT_CONFLICT"),  # v2 with nothing stored
    ],
)
def test_a_bad_version_fails_the_batch_and_nothing_is_written(stack: Stack, schema: str, batch, code: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(FactIntegrityError, match=code):
        fold(stack, schema, batch())
    assert versions(stack, schema, "k") == []


def test_a_stored_version_is_never_rewritten(stack: Stack, schema: str) -> None:
    fold(stack, schema, [fact("k", 1, 100), fact("k", 2, 200)])
    with pytest.raises(FactIntegrityError, match="FACT_DUPLICATE_VERSION"):
        fold(stack, schema, [fact("k", 2, 250, "a rewrite of v2", idem="x")])
    with pytest.raises(FactIntegrityError, match="FACT_STALE"):
        fold(stack, schema, [fact("k", 1, 50, "a rewrite of v1", idem="y")])
    assert [r[0] for r in versions(stack, schema, "k")] == [1, 2]


def test_a_vote_behind_the_gate_is_folded_from_its_decoded_fields(stack: Stack, schema: str) -> None:
    claw = offline_client("acme", "voter-1")
    env = claw.build("vote", {"proposalId": "p-9", "vote": "NO", "reason": "not, yet \u00e9"}, timestamp_ms=1234)
    src = LogPosition(NAMES.inbound("vote"), 2, 77)
    rec = LogRecord(NAMES.accepted("vote"), 2, next(_offset), 1300, b"k", encode_envelope(env),
                    ((SRC_HEADER, str(src).encode()), (LOG_TIME_HEADER, b"1250")))  # fmt: skip
    fold(stack, schema, [rec])
    with owner_db(stack) as conn:
        rows = conn.execute(f"SELECT tenant, proposal_id, claw_id, instance_id, vote, reason, event_id, log_time, "
                            f"source FROM {schema}.votes").fetchall()  # fmt: skip
    assert rows == [("acme", "p-9", "voter-1", env.instance_id, "NO", "not, yet \u00e9", env.event_id, 1250, str(src))]
