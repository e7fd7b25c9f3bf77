"""A replay whose digest differs says where: the tables that differ and rows of each side."""

from __future__ import annotations

import uuid

from contracts.kmms_records import KmmsEpisode, KmmsEvent, encode_kmms
from contracts.topics import TopicNames
from hivemem.stack import Stack
from projections.kmms.read_model import KmmsProjection
from projections.replay import differences, failures_apart
from streams.records import LogRecord
from tests.integration.support import owner_db

NAMES = TopicNames()


def _stored(offset: int, eid: str, text: str) -> LogRecord:
    ep = KmmsEpisode(episode_id=eid, session_id="s", thread_id="", content_type="NOTE", occurred_at=1,
                     content=text, content_hash=eid)  # fmt: skip
    ev = KmmsEvent(event_id=f"ev-{offset}", kind="EPISODE_STORED", at=1_000 + offset, source=f"src:0:{offset}",
                   trace_id="t", episode=ep, tenant="mem-diff", claw_id="claw-d", scope="ana")  # fmt: skip
    return LogRecord(NAMES.kmms_events, 0, offset, 1_000 + offset, b"k", encode_kmms(ev))


def test_differences_name_the_tables_and_rows_of_each_side(stack: Stack) -> None:
    projection = KmmsProjection()
    folds = {"kmms_diff_live": [_stored(0, "ep-a", "I live in Lisbon."), _stored(1, "ep-b", "I cycle to work.")],
             "kmms_diff_rebuilt": [_stored(0, "ep-a", "I live in Lisbon.")]}  # fmt: skip
    with owner_db(stack) as conn:
        for schema, records in folds.items():
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            with conn.transaction():
                for stmt in projection.ddl(schema):
                    conn.execute(stmt)  # type: ignore[arg-type]
                with conn.cursor() as cur:
                    projection.fold(cur, schema, records)
        try:
            found = differences(conn, projection, "kmms_diff_live", "kmms_diff_rebuilt")
            same = differences(conn, projection, "kmms_diff_rebuilt", "kmms_diff_rebuilt")
        finally:
            for schema in folds:
                conn.execute(f"DROP SCHEMA {schema} CASCADE")
    assert same == ()
    assert [(d.table, d.only_live, d.only_rebuilt) for d in found] == [("kmms_episodes", 1, 0), ("kmms_units", 1, 0)]
    assert all("ep-b" in d.live_sample[0] and d.rebuilt_sample == () for d in found)
    assert "kmms_units: 1 rows only live, 0 only rebuilt" in "\n".join(d.describe() for d in found)


def test_failures_apart_lists_records_only_one_side_could_not_fold(stack: Stack) -> None:
    live, rebuilt = f"diff-live-{uuid.uuid4().hex[:6]}", f"diff-rebuilt-{uuid.uuid4().hex[:6]}"
    rows = [(live, "t", 0, 5, "ValueError: bad"), (live, "t", 0, 9, "ValueError: both"),
            (rebuilt, "t", 0, 9, "ValueError: both"), (rebuilt, "t", 1, 2, "KeyError: x")]  # fmt: skip
    with owner_db(stack) as conn, conn.cursor() as cur:
        cur.executemany('INSERT INTO hivemem.processing_failures (processor, topic, partition, "offset", error) '
                         "VALUES (%s, %s, %s, %s, %s)", rows)  # fmt: skip
        try:
            assert failures_apart(conn, live, rebuilt) == (("t:0:5 ValueError: bad",), ("t:1:2 KeyError: x",))
        finally:
            conn.execute("DELETE FROM hivemem.processing_failures WHERE processor = ANY(%s)", ([live, rebuilt],))
