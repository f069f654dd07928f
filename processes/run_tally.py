"""The run tally: how many runs are in each state, kept beside the run table so the queue's counts
never read the runs themselves.

On PostgreSQL, triggers on ``process_run`` (migration 0016) append a delta row for every run
inserted or deleted and for every change of its state, mode, process or invoker — whoever writes
the run (the engine, a steering, a bulk insert, a raw UPDATE). Appending takes no lock another run
waits on. ``tally_fold`` (the ``system.processes.tally`` job, every minute) moves the deltas into
``process_run_tally``, one row per (process, mode, invoker, state). A count reads both in one
statement, so it is exact at any moment and costs the number of keys plus the deltas of the last
minute or so — not the number of runs ever made.

The embedded SQLite counts its runs directly (``tally_is_kept``): it keeps no tally.
"""

from __future__ import annotations

from collections import defaultdict

from django.db import connection, transaction
from django.db.models import Count, QuerySet

from processes.models import ProcessRun, ProcessRunTally, ProcessRunTallyDelta

KEY = ("process_id", "mode", "invoked_by_id", "state")


def tally_is_kept() -> bool:
    return connection.vendor == "postgresql"


def tally_counts(
    *, process_id: str | None = None, mode: str | None = None, invoked_by_id: int | None = None
) -> dict[str, int]:
    """Runs per state (only the states that have any), narrowed by whichever keys are given."""
    narrowing: dict[str, str | int | None] = {
        name: value
        for name, value in (
            ("process_id", process_id),
            ("mode", mode),
            ("invoked_by_id", invoked_by_id),
        )
        if value is not None
    }
    if not tally_is_kept():
        if narrowing.get("invoked_by_id") == 0:  # the tally's "invoked by nobody"
            narrowing["invoked_by_id"] = None
        return runs_counted(ProcessRun.objects.filter(**narrowing))
    # One statement over both tables: a fold committing meanwhile is seen whole or not at all.
    # The narrowing keys are KEY's own columns, so the WHERE is built from them alone.
    where = " AND ".join(f"{name} = %s" for name in narrowing) or "TRUE"
    params = list(narrowing.values()) * 2
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT state, SUM(n) FROM ("
            f"SELECT state, n FROM {ProcessRunTally._meta.db_table} WHERE {where} UNION ALL "
            f"SELECT state, n FROM {ProcessRunTallyDelta._meta.db_table} WHERE {where}"
            f") AS tally GROUP BY state",
            params,
        )
        return {state: int(n) for state, n in cursor.fetchall() if n}


def runs_counted(runs: QuerySet[ProcessRun]) -> dict[str, int]:
    """Runs per state by reading the runs (a bounded window, or SQLite)."""
    counted = runs.order_by().values_list("state").annotate(n=Count("pk"))
    return {state: n for state, n in counted}


@transaction.atomic
def tally_fold() -> int:
    """Move every delta into the tally; answer how many delta rows were folded.

    ``DELETE … RETURNING`` takes exactly the rows it sums (one snapshot); a delta appended meanwhile
    stays for the next fold. Two folds at once each take different rows."""
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM process_run_tally_delta RETURNING {', '.join(KEY)}, n")
        gone = cursor.fetchall()
        sums: dict[tuple, int] = defaultdict(int)
        for *key, n in gone:
            sums[tuple(key)] += n
        # In key order: two folds at once lock the tally rows they share in the same order.
        changed = [(*key, n) for key, n in sorted(sums.items()) if n]
        if changed:
            cursor.executemany(
                f"INSERT INTO process_run_tally ({', '.join(KEY)}, n) VALUES (%s, %s, %s, %s, %s) "
                f"ON CONFLICT ({', '.join(KEY)}) DO UPDATE SET n = process_run_tally.n + excluded.n",
                changed,
            )
    return len(gone)
