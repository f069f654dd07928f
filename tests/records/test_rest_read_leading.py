"""``rest_read_leading``: the first rows of distinct key and the whole answer's key count.

What an ``eachRow`` slice reads: a row listed twice is counted and taken once, a row whose key is
null or empty makes the answer ``keyless``, and the count is one aggregate whatever the key's kind.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from records.boundary import record_create
from records.rest.leading import rest_read_leading
from records.trail import Actor

pytestmark = pytest.mark.django_db


def _rows(user, ids: list[object]) -> None:
    for n, legacy_id in enumerate(ids):
        parent = {"company_name": f"Company {n}", "status": "pending"}
        if legacy_id is not None:
            parent["legacy_id"] = legacy_id
        record_create(actor=Actor(user=user), record_type="legacy_customer", parent=parent)


def _read(
    user, key: str = "legacy_id", take: int = 3, select: str = "pg_row_id,legacy_id", page: str = ""
):
    return rest_read_leading(
        user=user,
        path_and_query=f"legacy_customer?select={select}&status=eq.pending&order=legacy_id{page}",
        key=key,
        take=take,
        max_bytes=1_000_000,  # the engine passes its bound: no setting read here
    )


def test_a_key_listed_twice_is_counted_and_taken_once(alice):
    _rows(alice, ["L1", "L2", "L2", "L3", "L4", "L4", "L5"])
    read = _read(alice)
    assert [row["legacy_id"] for row in read.rows] == ["L1", "L2", "L3"]
    assert (read.keys, read.keyless) == (5, False)


@pytest.mark.parametrize("missing", [None, ""])
def test_a_row_with_no_key_or_an_empty_one_makes_the_answer_keyless(alice, missing):
    _rows(alice, ["L1", "L2", "L3", "L4", missing])
    read = _read(alice, take=10)
    assert read.keyless
    # The keys counted are the rows that have one.
    assert read.keys == 4


def test_a_keyless_row_past_the_rows_taken_is_found_by_the_count(alice):
    _rows(alice, ["L1", "L2", "L3", "L4", None])  # null: ordered last, never taken
    read = _read(alice, take=2)
    assert [row["legacy_id"] for row in read.rows] == ["L1", "L2"]
    assert (read.keys, read.keyless) == (4, True)


def test_an_authors_limit_bounds_what_is_counted(alice):
    _rows(alice, ["L1", "L2", "L2", "L3", "L4", None])
    read = _read(alice, take=2, page="&offset=1&limit=3")  # L2, L2, L3: the null is past it
    assert [row["legacy_id"] for row in read.rows] == ["L2", "L3"]
    assert (read.keys, read.keyless) == (2, False)


def test_an_empty_key_within_an_authors_limit_makes_the_answer_keyless(alice):
    _rows(alice, ["L1", "L2", "L3", ""])
    read = _read(alice, take=10, page="&limit=3")  # "", L1, L2: an empty text sorts first
    assert (read.keys, read.keyless) == (2, True)


def test_a_key_of_another_kind_counts_each_row(alice):
    _rows(alice, ["L1", "L1", "L2"])
    read = _read(alice, key="pg_row_id", take=10)
    assert (len(read.rows), read.keys, read.keyless) == (3, 3, False)


def test_a_key_the_read_does_not_select_leaves_every_row_keyless(alice):
    _rows(alice, ["L1", "L2"])
    read = _read(alice, key="company_name", take=10)
    assert (read.keys, read.keyless) == (2, True)


def test_rows_another_user_may_not_read_are_not_counted(alice, bob):
    _rows(alice, ["L1", "L2"])
    _rows(bob, ["B1", "B2", "B3"])
    assert _read(alice, take=10).keys == 2
    assert _read(bob, take=10).keys == 3


def test_the_count_is_one_aggregate_reading_the_key_twice_a_row(alice):
    _rows(alice, ["L1", "L2", "L2", "L3", ""])
    with CaptureQueriesContext(connection) as captured:
        read = _read(alice, take=10)
    assert (read.keys, read.keyless) == (3, True)
    # The count, then one page (every row fits it).
    assert len(captured.captured_queries) == 2
    count = captured.captured_queries[0]["sql"]
    # The key read once for its distinct count and once for the rows with one: not once per
    # condition (a null key, an empty one) of each count.
    assert count.upper().count("COUNT(") == 3
    if connection.vendor == "postgresql":
        assert count.count("->> ('legacy_id')") == 2
