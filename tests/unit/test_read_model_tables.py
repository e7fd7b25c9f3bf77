"""A read model's table declared once: the CREATE TABLE statement, the insert list and the digest's select list.

The lists are held to a real table's columns by tests/integration/test_digest_columns.py; here, how one
declaration turns into each of them.
"""

from __future__ import annotations

import pytest

from projections.read_models import DigestTable, Table

NOTES = Table(
    "notes",
    (("tenant", "text NOT NULL"), ("note_id", "text NOT NULL"), ("body", "text NOT NULL"),
     ("tsv", "tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) STORED"), ("embedding", "vector(3)"),
     ("projected_at", "timestamptz NOT NULL DEFAULT clock_timestamp()")),
    ("tenant", "note_id"),
    wall_clock=("projected_at",),
    digest_as=(("embedding", "embedding::text"),),
)  # fmt: skip


def test_create_writes_every_column_in_order_then_the_key() -> None:
    assert NOTES.create("s") == (
        "CREATE TABLE s.notes (tenant text NOT NULL, note_id text NOT NULL, body text NOT NULL, "
        "tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) STORED, embedding vector(3), "
        "projected_at timestamptz NOT NULL DEFAULT clock_timestamp(), PRIMARY KEY (tenant, note_id))"
    )
    assert NOTES.create("s", if_not_exists=True).startswith("CREATE TABLE IF NOT EXISTS s.notes (")


def test_a_one_column_key_is_written_on_its_column() -> None:
    votes = Table("votes", (("vote", "text NOT NULL"), ("source", "text")), ("source",))
    assert votes.create("g") == "CREATE TABLE g.votes (vote text NOT NULL, source text PRIMARY KEY)"


def test_generated_and_wall_clock_columns_are_neither_written_nor_digested() -> None:
    assert NOTES.generated == ("tsv",)
    assert NOTES.names == "tenant, note_id, body, embedding"
    assert NOTES.digest() == DigestTable(
        "notes", "tenant, note_id, body, embedding::text", "tenant, note_id", wall_clock=("projected_at",)
    )


def test_digest_order_reorders_the_digested_columns_only() -> None:
    t = Table("t", (("b", "int"), ("a", "int"), ("g", "int GENERATED ALWAYS AS (a + b) STORED")), ("a",),
              digest_order=("a", "b"))  # fmt: skip
    assert t.names == "b, a"
    assert t.digest().columns == "a, b"


@pytest.mark.parametrize(
    "bad",
    [
        {"primary_key": ("missing",)},
        {"primary_key": ("a",), "wall_clock": ("nope",)},
        {"primary_key": ("a",), "digest_as": (("nope", "md5(nope) AS nope"),)},
        {"primary_key": ("a",), "digest_order": ("a",)},  # b left out
        {"primary_key": ("a",), "digest_order": ("a", "b", "g")},  # g is generated
    ],
)
def test_a_declaration_naming_no_column_or_leaving_one_out_is_refused(bad: dict[str, object]) -> None:
    columns = (("a", "int"), ("b", "int"), ("g", "int GENERATED ALWAYS AS (a + b) STORED"))
    with pytest.raises(ValueError):
        Table("t", columns, **bad)  # type: ignore[arg-type]


def test_a_column_declared_twice_is_refused() -> None:
    with pytest.raises(ValueError):
        Table("t", (("a", "int"), ("a", "text")), ("a",))
