"""Real concurrency for tests: threads released together, each with its own database connection."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.db import connections


def race(workers: int, fn: Callable[[int], Any]) -> list[Any]:
    """Run ``fn(i)`` in ``workers`` threads released together; answers results or exceptions, in order."""
    barrier = threading.Barrier(workers)
    results: list[Any] = [None] * workers

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=10)
            results[i] = fn(i)
        except Exception as exc:  # the test asserts on it
            results[i] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)
    return results


def meanwhile(fn: Callable[..., Any], *args: Any) -> None:
    """Run ``fn(*args)`` to its end as another writer would: in its own thread, inside its own
    transaction on its own connection, committed before this returns."""
    from django.db import connection, transaction

    def run() -> None:
        try:
            with transaction.atomic():
                fn(*args)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
