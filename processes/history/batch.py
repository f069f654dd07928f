"""One batch of a purge: a few hundred runs and what belongs to them, in one short transaction.

What belongs to a run: its ledger rows, its event waits (``events`` in the answer: the waits of
its ``waitFor`` steps — an event itself is its sender's and stays), its human tasks and its
migration slices. Nothing else is touched: records, the write trail, held deletes (a decided
one keeps naming the run), the audit and the events stay. A run started from a purged run
(retry, redirect) keeps its ``linkedHow`` and loses its ``linkedFrom`` (the link's
``on_delete=SET_NULL``, done here because the runs are deleted by primary key, not collected).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import connection, models, transaction

from processes.events.models import EventWait
from processes.history.archive import archive_append
from processes.history.selection import runs_held_back
from processes.human_tasks.models import HumanTask
from processes.models import TERMINAL_STATES, ProcessRun, ProcessRunSlice, ProcessRunStep
from processes.run_search.models import RunSearchKey


@dataclass
class BatchCounts:
    runs: int = 0
    ledger_rows: int = 0
    events: int = 0
    tasks: int = 0


# What an archive line holds beside the run row: (its key, the table, the order within a run).
_BELONGING: tuple[tuple[str, type[models.Model], str], ...] = (
    ("ledger", ProcessRunStep, "sequence"),
    ("events", EventWait, "id"),
    ("tasks", HumanTask, "created_at"),
    ("slices", ProcessRunSlice, "number"),
)


def batch_count(run_ids: list[uuid.UUID]) -> BatchCounts:
    """What purging ``run_ids`` would delete (a dry run): counted, nothing locked or written."""
    return BatchCounts(
        runs=len(run_ids),
        ledger_rows=ProcessRunStep.objects.filter(run_id__in=run_ids).count(),
        events=EventWait.objects.filter(run_id__in=run_ids).count(),
        tasks=HumanTask.objects.filter(run_id__in=run_ids).count(),
    )


def _archive_lines(run_ids: list[uuid.UUID]) -> list[dict[str, Any]]:
    """One line per run: its row, and its ledger, event waits, tasks and slices."""
    lines: dict[uuid.UUID, dict[str, Any]] = {
        row["run_id"]: {"run": row, **{key: [] for key, _, _ in _BELONGING}}
        for row in ProcessRun.objects.filter(pk__in=run_ids).order_by("finished_at").values()
    }
    for key, model, order in _BELONGING:
        rows = model._default_manager.filter(run_id__in=run_ids).order_by("run_id", order)
        for row in rows.values():
            lines[row["run_id"]][key].append(row)
    return list(lines.values())


def batch_purge(run_ids: list[uuid.UUID], *, archive: Path | None) -> BatchCounts:
    """Delete ``run_ids`` (those still ended and not held back) and what belongs to them, in one
    transaction, after appending them to ``archive`` when one is given.

    The runs are locked first, so a retry or a rollback of one of them (which lock it too) either
    comes before — and the run is held back or no longer ended — or after, and finds no run."""
    with transaction.atomic():
        locked = ProcessRun.objects.select_for_update().filter(
            pk__in=run_ids, state__in=TERMINAL_STATES
        )
        ids = list(locked.values_list("pk", flat=True))
        held = runs_held_back(ids)
        ids = [run_id for run_id in ids if run_id not in held]
        if not ids:
            return BatchCounts()
        if archive is not None:
            archive_append(archive, _archive_lines(ids))
        if connection.vendor == "postgresql":
            return _delete_in_one_statement(ids)
        counts = BatchCounts(runs=len(ids))
        counts.events = EventWait.objects.filter(run_id__in=ids).delete()[0]
        counts.tasks = HumanTask.objects.filter(run_id__in=ids).delete()[0]
        ProcessRunSlice.objects.filter(run_id__in=ids).delete()
        RunSearchKey.objects.filter(run_id__in=ids).delete()
        counts.ledger_rows = ProcessRunStep.objects.filter(run_id__in=ids).delete()[0]
        ProcessRun.objects.filter(linked_from__in=ids).update(linked_from=None)
        # By primary key, not collected: what belonged to them is gone and the links are cleared.
        with connection.cursor() as cursor:
            marks = ", ".join(["%s"] * len(ids))
            cursor.execute(
                f"DELETE FROM process_run WHERE run_id IN ({marks})",
                [uuid.UUID(str(i)).hex for i in ids],
            )
    return counts


# PostgreSQL: the same deletes as one statement, one round trip (the foreign keys are checked at
# commit). A link from a run that stays is cleared; one from a run deleted with it needs nothing.
_ONE_STATEMENT = """
WITH w AS (DELETE FROM process_event_wait WHERE run_id = ANY(%(ids)s) RETURNING 1),
     t AS (DELETE FROM process_task WHERE run_id = ANY(%(ids)s) RETURNING 1),
     s AS (DELETE FROM process_run_slice WHERE run_id = ANY(%(ids)s) RETURNING 1),
     k AS (DELETE FROM process_run_search_key WHERE run_id = ANY(%(ids)s) RETURNING 1),
     l AS (DELETE FROM process_run_step WHERE run_id = ANY(%(ids)s) RETURNING 1),
     u AS (UPDATE process_run SET linked_from_id = NULL
           WHERE linked_from_id = ANY(%(ids)s) AND NOT run_id = ANY(%(ids)s) RETURNING 1),
     r AS (DELETE FROM process_run WHERE run_id = ANY(%(ids)s) RETURNING 1)
SELECT (SELECT count(*) FROM r), (SELECT count(*) FROM l), (SELECT count(*) FROM w),
       (SELECT count(*) FROM t), (SELECT count(*) FROM s), (SELECT count(*) FROM u),
       (SELECT count(*) FROM k)
"""


def _delete_in_one_statement(ids: list[uuid.UUID]) -> BatchCounts:
    with connection.cursor() as cursor:
        cursor.execute(_ONE_STATEMENT, {"ids": ids})
        runs, ledger_rows, events, tasks, *_ = cursor.fetchone()
    return BatchCounts(runs=runs, ledger_rows=ledger_rows, events=events, tasks=tasks)
