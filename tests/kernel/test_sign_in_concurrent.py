"""The sign-in lockout under real concurrency on PostgreSQL: every failure counts, exactly once.

Each thread stands for a web process: its own database connection, released together by a
Barrier, and nothing shared but the database — the lockout must not live in any process's memory.
"""

from __future__ import annotations

import pytest
from django.db import connection

from kernel.models import SignInFailure
from kernel.sign_in import SignInLocked, sign_in_failure_record, sign_in_lock_check
from tests.concurrency import race

pytestmark = [
    pytest.mark.postgres_only,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL: SQLite serialises writers, so there is no race to test",
    ),
]

WORKERS = 16


def test_simultaneous_failures_for_a_new_username_are_all_counted_in_one_row():
    results = race(WORKERS, lambda i: sign_in_failure_record(username="target", address="10.0.0.9"))
    assert [r for r in results if isinstance(r, Exception)] == []
    row = SignInFailure.objects.get(username="target")
    assert (row.username, row.address, row.failures) == ("target", "10.0.0.9", WORKERS)
    assert row.locked_until is not None  # 16 ≥ 10: locked
    with pytest.raises(SignInLocked):
        sign_in_lock_check(username="target", address="10.0.0.9")
    sign_in_lock_check(username="target", address="10.0.0.10")  # another client is not locked


def test_simultaneous_failures_over_many_usernames_are_all_counted_for_the_address(settings):
    settings.TURBOBASE_SIGN_IN_ADDRESS_MAX_FAILURES = WORKERS
    results = race(WORKERS, lambda i: sign_in_failure_record(username=f"u{i}", address="10.0.0.9"))
    assert [r for r in results if isinstance(r, Exception)] == []
    row = SignInFailure.objects.get(username="")
    assert (row.address, row.failures) == ("10.0.0.9", WORKERS)
    assert row.locked_until is not None
    with pytest.raises(SignInLocked):
        sign_in_lock_check(username="anyone", address="10.0.0.9")
