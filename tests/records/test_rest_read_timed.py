"""``rest_read_timed`` (``ctx.query``'s read on PostgreSQL outside a transaction): the read and its
``statement_timeout`` in one statement, answering what ``rest_read`` answers — a short answer from
that one statement, a longer one read again streamed — and abandoned past its time ceiling."""

from __future__ import annotations

import psycopg
import pytest
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext

from records.boundary import record_create
from records.rest.errors import ResponseTooLarge
from records.rest.execute import CHUNK_SIZE, rest_read
from records.rest.timed import rest_read_timed
from records.trail import Actor

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's statement_timeout"),
]

READS = [
    "legacy_customer",
    "legacy_customer?select=legacy_id,amount&order=amount.desc",
    "legacy_customer?select=legacy_id&status=eq.pending&order=legacy_id",
    "legacy_customer?select=legacy_id,pg_row_id,created_at&order=legacy_id&limit=2&offset=1",
    "legacy_customer?select=legacy_id&legacy_id=in.(L1,L3,B1)",
    "legacy_customer?select=legacy_id&legacy_id=in.()",
    "legacy_customer?select=legacy_id&order=legacy_id&offset=2",
]


@pytest.fixture
def rows(alice, bob):
    made = [(alice, "L1", "pending"), (alice, "L2", "done"), (bob, "B1", "pending")]
    for n, (user, legacy_id, status) in enumerate(made):
        record_create(
            actor=Actor(user=user),
            record_type="legacy_customer",
            parent={"legacy_id": legacy_id, "status": status, "amount": n},
        )


def _timed(user, path: str, *, max_bytes: int = 10_000_000, timeout_ms: int = 30_000) -> list:
    return rest_read_timed(
        user=user, path_and_query=path, max_bytes=max_bytes, timeout_ms=timeout_ms
    )


@pytest.mark.parametrize("path", READS)
def test_a_short_answer_is_one_statement_and_the_answer_rest_read_gives(alice, rows, path):
    with CaptureQueriesContext(connection) as queries:
        answer = _timed(alice, path)
    assert answer == rest_read(user=alice, path_and_query=path)
    sent = [q["sql"] for q in queries.captured_queries]
    assert len(sent) <= 1  # none for a filter no row can match
    assert all(sql.startswith("SET LOCAL statement_timeout = 30000; SELECT") for sql in sent)
    # The bound ended with its statement: the connection is back at no bound.
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone() == ("0",)


def test_an_answer_longer_than_a_chunk_is_read_again_streamed_and_whole(alice):
    actor = Actor(user=alice)
    for n in range(CHUNK_SIZE + 3):
        record_create(actor=actor, record_type="legacy_customer", parent={"n": n})
    path = "legacy_customer?select=n&order=n"
    with CaptureQueriesContext(connection) as queries:
        answer = _timed(alice, path)
    assert answer == [{"n": n} for n in range(CHUNK_SIZE + 3)]
    sent = [q["sql"] for q in queries.captured_queries]
    assert sent[0].startswith("SET LOCAL statement_timeout")
    # Read again in a transaction of its own, with the same bound.
    assert sent[1:3] == ["BEGIN", "SET LOCAL statement_timeout = 30000"]
    assert _timed(alice, path + "&limit=4&offset=2") == [{"n": n} for n in range(2, 6)]


def test_the_byte_ceiling_fails_the_read_by_name(alice, rows):
    path = "legacy_customer?select=legacy_id&order=legacy_id"
    # [{"legacy_id":"L1"},{"legacy_id":"L2"}] is 39 bytes.
    assert _timed(alice, path, max_bytes=39) == [{"legacy_id": "L1"}, {"legacy_id": "L2"}]
    with pytest.raises(ResponseTooLarge) as info:
        _timed(alice, path, max_bytes=38)
    assert info.value.code == "READ_BYTE_CEILING"
    assert "38 bytes (this read's byte budget)" in info.value.message


def test_the_read_is_abandoned_past_its_time_ceiling(alice, rows):
    """Another session holds the record table: the read waits, and the database cancels it."""
    settings = connection.settings_dict
    other = psycopg.connect(
        dbname=settings["NAME"],
        user=settings["USER"],
        host=settings["HOST"],
        port=settings["PORT"] or 5432,
        password=settings["PASSWORD"] or None,
    )
    try:
        other.execute("LOCK TABLE record IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(DatabaseError) as info:
            _timed(alice, "legacy_customer?select=legacy_id", timeout_ms=200)
        assert "statement timeout" in str(info.value)
    finally:
        other.rollback()
        other.close()
    # The connection carries on, unbounded, outside any transaction.
    assert len(_timed(alice, "legacy_customer?select=legacy_id")) == 2
    assert connection.get_autocommit() and not connection.in_atomic_block
