"""Waking parked runs: on a source's verdict, on the clock, and by the sweeper."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from processes.engine.ending import run_end, run_redeliver
from processes.engine.lease import lease_seconds
from processes.engine.rollback import rolled_back_reason
from processes.engine.waits import verdict_in
from processes.lanes import lane_send_many
from processes.models import Disposition, PendingReason, ProcessRun, ProcessRunStep, RunState
from processes.status import RunMove, states_from
from records.models import RecordWriteState, WriteOperation, WriteStatus
from records.outcomes import VerdictKind


def on_source_verdict(
    sender: Any = None, *, write_state_id: int, record_id: Any, verdict: str, **kwargs: Any
) -> None:
    """Handed a delete's verdict (``verdict_wakeups``): keep a rolled-back run honest about the
    deletes it sent. (A run waiting on the write was woken by the verdict's fold.)"""
    state = (
        RecordWriteState.reads.filter(pk=write_state_id)
        .only("operation", "message", "reason_code")
        .first()
    )
    if state is None or state.operation != WriteOperation.DELETE:
        return
    for row in ProcessRunStep.objects.filter(
        pg_row_id=record_id, disposition=Disposition.ROLLED_BACK
    ).select_related("run"):
        run = row.run
        if verdict == VerdictKind.REFUSED:
            with transaction.atomic():
                row.disposition = (
                    Disposition.CONFIRMED if row.refusal_code is None else Disposition.FAILED
                )
                row.save(update_fields=["disposition", "updated_at"])
                if run.state == RunState.ROLLED_BACK:
                    run_end(
                        run,
                        RunState.FAILED,
                        reason=(
                            f"the source refused the rollback delete of {row.record_type} {row.pg_row_id} "
                            f"(step {row.step_id!r}): {state.reason_code}: {state.message}; roll back again once fixed"
                        ),
                    )
        elif run.state == RunState.ROLLED_BACK:
            ProcessRun.objects.filter(pk=run.pk).update(reason=rolled_back_reason(run))


def source_wake(run_ids: Sequence[Any], *, row_pk: int | None = None) -> int:
    """Wake the runs of ``run_ids`` parked on a source's verdict, in one UPDATE … RETURNING that
    claims the wake-up as the lanes' watch claims a due one: it clears ``wake_at`` (the budget's
    end), so of the verdict's wake-up, the parking delivery's look and the budget's exactly one
    sends the delivery; a run not parked yet (still ``running``) is not woken here — the delivery
    parking it looks itself. ``row_pk`` (that look): wake only if the ledger row no longer
    awaits an undecided write. Sent after the current transaction commits. Returns how many."""
    if not run_ids:
        return 0
    ops, pk = connection.ops, ProcessRun._meta.pk
    assert pk is not None
    stamp = ops.adapt_datetimefield_value(timezone.now())
    ids = [pk.get_db_prep_value(run_id, connection) for run_id in run_ids]
    params: list[Any] = [stamp, stamp, *ids, RunState.RUNNING, PendingReason.AWAITING_SOURCE]
    landed = ""
    if row_pk is not None:
        landed = (
            f" AND NOT EXISTS (SELECT 1 FROM {ProcessRunStep._meta.db_table} s"
            f" JOIN {RecordWriteState._meta.db_table} w ON w.id = s.write_state_id"
            " WHERE s.id = %s AND s.awaiting_verdict AND w.status IN (%s, %s))"
        )
        params += [row_pk, WriteStatus.PENDING, WriteStatus.HELD]
    sql = (
        f"UPDATE {ProcessRun._meta.db_table} SET delivery = delivery + 1, wake_at = NULL,"
        f" enqueued_at = %s, updated_at = %s WHERE run_id IN ({', '.join(['%s'] * len(ids))})"
        f" AND state = %s AND pending_reason = %s AND wake_at IS NOT NULL{landed}"
        " RETURNING run_id, delivery, mode"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    by_mode: dict[str, list[tuple[UUID, int]]] = {}
    for run_id, delivery, mode in rows:
        by_mode.setdefault(mode, []).append((_uuid(run_id), delivery))
    for mode, woken in by_mode.items():
        lane_send_many(woken, mode=mode)
    return len(rows)


def _uuid(value: Any) -> UUID:
    return value if isinstance(value, UUID) else UUID(value)


WAKE_POLL_S = 0.5  # how often each lane's watch reads the due-time index
# A delivery not taken this long after it was sent waits for a worker: a free one takes it at once.
AWAITING_WORKER_AFTER = timedelta(seconds=1)
# Waiting for a worker, whichever way it was put: the runs a lost delivery is looked for among.
WANTS_WORKER = (PendingReason.RUNNING, PendingReason.QUEUED, PendingReason.AWAITING_WORKER)


def workers_busy_mark(*, mode: str, now: datetime | None = None) -> int:
    """Mark the lane's runs whose delivery was sent over ``AWAITING_WORKER_AFTER`` ago and that no
    worker has taken ``awaitingWorker`` (the claim sets ``running``). One UPDATE on the live runs'
    (state, pending_reason) index, from the lanes' watch every ``WAKE_POLL_S``. Returns how many."""
    now = now or timezone.now()
    return (
        ProcessRun.objects.filter(
            mode=mode,
            state__in=states_from(RunMove.CLAIM),
            pending_reason=PendingReason.QUEUED,
            enqueued_at__lt=now - AWAITING_WORKER_AFTER,
        )
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .update(pending_reason=PendingReason.AWAITING_WORKER)
    )


def wakeups_due(*, mode: str, now: datetime | None = None, limit: int = 1000) -> int:
    """Deliver every parked run of the lane whose due time (``wake_at``: an awaitSource budget's
    end, a delete window's free time, a sleep's end, a rollback's retry) has come. Read from the
    ``wake_at`` index every ``WAKE_POLL_S``, so a wake-up is sent within about a second of its
    time, not at the next minute sweep. Up to ``limit`` due runs are claimed by one statement
    (``wake_due_claim``) and their wake-ups sent in bulk (``lane_send_many``): a thousand sleepers
    due in the same second cost one UPDATE and one broker insert, not a thousand of each. Of two
    watches (two hosts) exactly one claims a run. Returns how many."""
    now = now or timezone.now()
    woken = 0
    while True:
        with transaction.atomic():
            claimed = wake_due_claim(mode=mode, now=now, limit=limit)
            lane_send_many(claimed, mode=mode)
        woken += len(claimed)
        if len(claimed) < limit:
            return woken


def wake_due_claim(*, mode: str, now: datetime, limit: int) -> list[tuple[UUID, int]]:
    """Claim up to ``limit`` of the lane's due parked runs in one UPDATE … RETURNING: clear
    ``wake_at`` (so no other look claims them), bump ``delivery`` (an older delivery still
    waiting is stale) and note ``enqueued_at`` (a lost wake-up is sent again by the sweep a lease
    later). On PostgreSQL the due rows are picked ``FOR UPDATE SKIP LOCKED``, so two watches
    split them; SQLite serializes writers. Returns (run id, new delivery) of each claimed run."""
    table = ProcessRun._meta.db_table
    ops = connection.ops
    at = ops.adapt_datetimefield_value(now)
    stamp = ops.adapt_datetimefield_value(timezone.now())
    lock = (
        " FOR UPDATE SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""
    )
    due = (
        f"SELECT run_id FROM {table} WHERE mode = %s AND state = %s AND wake_at <= %s"
        f" AND (lease_until IS NULL OR lease_until < %s) ORDER BY wake_at LIMIT %s{lock}"
    )
    sql = (
        f"UPDATE {table} SET wake_at = NULL, delivery = delivery + 1, updated_at = %s,"
        f" enqueued_at = %s WHERE run_id IN ({due}) AND wake_at IS NOT NULL"
        " RETURNING run_id, delivery"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [stamp, stamp, mode, RunState.RUNNING, at, at, limit])
        rows = cursor.fetchall()
    return [(_uuid(run_id), n) for run_id, n in rows]


def runs_due(now: datetime | None = None) -> list[Any]:
    """Parked or orphaned runs that should get a delivery now: a wait budget ran out, a clock
    came, a verdict is in but its wake-up was lost, or a worker died (lease expired)."""
    now = now or timezone.now()
    parked = ProcessRun.objects.filter(state=RunState.RUNNING).filter(
        Q(lease_until__isnull=True) | Q(lease_until__lt=now)
    )
    due = []
    for run in parked.only("run_id", "pending_reason", "wait_deadline", "wake_at", "lease_until"):
        if (
            run.pending_reason in WANTS_WORKER
            or (run.wait_deadline is not None and run.wait_deadline <= now)
            or (run.wake_at is not None and run.wake_at <= now)
            or (run.pending_reason == PendingReason.AWAITING_SOURCE and verdict_in(run.pk))
        ):
            due.append(run.pk)
    return due


PARKED = (
    PendingReason.AWAITING_SOURCE,
    PendingReason.AWAITING_TIME,
    PendingReason.AWAITING_ACTION,
    PendingReason.AWAITING_INPUT,
)


def waits_sweep(now: datetime | None = None) -> int:
    """The sweeper's task: re-queue every due run. Returns how many.

    Not a parked run whose wake-up the lanes' watch sent less than a lease ago: it waits in its
    lane's queue for a worker, and sending it again would make that delivery stale and put the run
    at the back — with many runs due at once (a thousand sleepers), every minute, for ever. One
    whose wake-up was lost is sent again here once a lease has passed."""
    now = now or timezone.now()
    due = runs_due(now)
    waiting = set(
        ProcessRun.objects.filter(
            pk__in=due,
            pending_reason__in=PARKED,
            wake_at__isnull=True,
            enqueued_at__gt=now - timedelta(seconds=lease_seconds()),
        ).values_list("pk", flat=True)
    )
    swept = [run_id for run_id in due if run_id not in waiting]
    for run_id in swept:
        run_redeliver(run_id)
    return len(swept)
