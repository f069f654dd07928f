"""A sync run's answer: the run settled, told to whoever waits on it.

On PostgreSQL the delivery that ends a ``?mode=sync`` run sends ``NOTIFY tb_run_settled, '<run
id>'`` in the transaction that ends it (delivered on commit, never for a rolled-back end), and the
waiting request LISTENs on the connection it already holds: no extra connection, no poll between
the run's end and the answer. Anywhere else (SQLite, or a request inside an outer transaction,
which would see no notice before it commits) the wait polls the run row with a short back-off.
A notice is only a hint: the run row decides, and it is read again at least once a second.
"""

from __future__ import annotations

import time
from uuid import UUID

from django.db import connection

from processes.models import ProcessRun, RunMode

SETTLED_CHANNEL = "tb_run_settled"
POLL_SECONDS = 0.02
POLL_MAX_SECONDS = 0.25
NOTICE_RECHECK_SECONDS = 1.0  # a missed notice (a path that sends none) costs at most this


def _listening() -> bool:
    return connection.vendor == "postgresql" and not connection.in_atomic_block


def run_settled_notify(run_id: UUID | str, mode: str) -> None:
    """Inside the transaction that ends a run: tell a waiting ``?mode=sync`` request, on commit."""
    if mode != RunMode.SYNC or connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_notify(%s, %s)", [SETTLED_CHANNEL, str(run_id)])


def run_settle_wait(run: ProcessRun, *, deadline: float) -> ProcessRun | None:
    """Until ``deadline`` (``time.monotonic()``): the run once terminal, or None when time runs out."""
    run.refresh_from_db()  # a run the request delivered itself is usually settled: no LISTEN
    if run.is_terminal:
        return run
    if time.monotonic() >= deadline:
        return None
    if _listening():
        return _wait_notified(run, deadline)
    return _wait_polling(run, deadline)


def _wait_polling(run: ProcessRun, deadline: float) -> ProcessRun | None:
    pause = POLL_SECONDS
    while True:
        run.refresh_from_db()
        if run.is_terminal:
            return run
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        time.sleep(min(pause, left))
        pause = min(pause * 1.5, POLL_MAX_SECONDS)


def _wait_notified(run: ProcessRun, deadline: float) -> ProcessRun | None:
    connection.ensure_connection()
    pg = connection.connection
    pg.execute(f"LISTEN {SETTLED_CHANNEL}")
    try:
        wanted = str(run.run_id)
        while True:
            # Read after LISTEN: an end committed before it is seen here, one after it is notified.
            run.refresh_from_db()
            if run.is_terminal:
                return run
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            window = min(left, NOTICE_RECHECK_SECONDS)
            for notice in pg.notifies(timeout=window):
                if notice.payload == wanted:
                    break
    finally:
        pg.execute(f"UNLISTEN {SETTLED_CHANNEL}")
