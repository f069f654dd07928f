"""The sign-in lockout under real concurrency on PostgreSQL: every failure counts, exactly once.

Each thread stands for a web process: its own database connection, released together by a
Barrier, and nothing shared but the database — the lockout must not live in any process's memory.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from kernel.models import SignInFailure
from kernel.sign_in import SignInLocked, sign_in_failure_record, sign_in_lock_check

pytestmark = [
    pytest.mark.postgres_only,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL: SQLite serialises writers, so there is no race to test",
    ),
]

WORKERS = 16


def _race(fn) -> list[Exception | None]:
    barrier = threading.Barrier(WORKERS)
    errors: list[Exception | None] = [None] * WORKERS

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=10)
            fn()
        except Exception as exc:  # the test asserts on it
            errors[i] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)
    return errors


def test_simultaneous_failures_for_a_new_username_are_all_counted_in_one_row():
    errors = _race(lambda: sign_in_failure_record(username="target"))
    assert errors == [None] * WORKERS
    row = SignInFailure.objects.get()
    assert (row.username, row.failures) == ("target", WORKERS)
    assert row.locked_until is not None  # 16 ≥ 10: locked
    with pytest.raises(SignInLocked):
        sign_in_lock_check(username="target")
