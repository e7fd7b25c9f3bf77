"""``copy_insert`` on real Postgres: a batch's new rows go in once, whatever its size, and a row already
stored (a re-delivered copy) is skipped without failing the batch or its transaction."""

from __future__ import annotations

import uuid

import pytest

from projections.read_models import SMALL_BATCH, copy_insert
from tests.conftest import Stack
from tests.integration.support import owner_db


@pytest.fixture()
def table(stack: Stack) -> str:
    name = f"ci_{uuid.uuid4().hex[:8]}"
    with owner_db(stack) as conn:
        conn.execute(f"CREATE TABLE public.{name} (k int PRIMARY KEY, v text NOT NULL, "
                     "at timestamptz NOT NULL DEFAULT clock_timestamp())")  # fmt: skip
    return name


def rows_of(stack: Stack, table: str) -> list[tuple[object, ...]]:
    with owner_db(stack) as conn:
        return conn.execute(f"SELECT k, v FROM public.{table} ORDER BY k").fetchall()


@pytest.mark.parametrize("size", [3, SMALL_BATCH + 1, 1000])
def test_new_rows_go_in_and_copies_are_skipped(stack: Stack, table: str, size: int) -> None:
    first: list[tuple[object, ...]] = [(i, f"first {i}") for i in range(size)]
    with owner_db(stack) as conn, conn.transaction(), conn.cursor() as cur:
        copy_insert(cur, "public", table, "k, v", first)
    assert rows_of(stack, table) == [(i, f"first {i}") for i in range(size)]
    # Half of the next batch was stored already: those rows keep their first values, the rest go in,
    # and the transaction goes on (a later statement in it commits with the batch).
    again: list[tuple[object, ...]] = [(i, f"second {i}") for i in range(size // 2, size + size // 2)]
    with owner_db(stack) as conn, conn.transaction(), conn.cursor() as cur:
        copy_insert(cur, "public", table, "k, v", again)
        cur.execute(f"INSERT INTO public.{table} (k, v) VALUES (-1, 'after')")
    expected = [(-1, "after")] + [(i, f"first {i}") for i in range(size)]
    expected += [(i, f"second {i}") for i in range(size, size + size // 2)]
    assert rows_of(stack, table) == expected


def test_a_batch_that_breaks_another_rule_still_fails(stack: Stack, table: str) -> None:
    bad: list[tuple[object, ...]] = [(i, "x" if i != 500 else None) for i in range(1000)]  # NOT NULL, not a copy
    with (
        pytest.raises(Exception, match="null value"),
        owner_db(stack) as conn,
        conn.transaction(),
        conn.cursor() as cur,
    ):
        copy_insert(cur, "public", table, "k, v", bad)
    assert rows_of(stack, table) == []
