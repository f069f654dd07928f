"""Waking parked runs: on a source's verdict, on the clock, and by the sweeper."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django_q.models import Schedule

from processes.engine.ending import run_end, run_redeliver
from processes.engine.rollback import rolled_back_reason
from processes.engine.waits import runs_waiting_on
from processes.models import Disposition, PendingReason, ProcessRun, ProcessRunStep, RunState
from records.models import RecordWriteState, WriteOperation
from records.outcomes import VerdictKind


def on_source_verdict(sender: Any = None, *, write_state_id: int, record_id: Any, verdict: str, **kwargs: Any) -> None:
    """Connected to ``records.verdicts.source_verdict``: wake runs waiting on this write, and
    keep a rolled-back run honest about the deletes it sent."""
    for run_id in runs_waiting_on(write_state_id):
        run_redeliver(run_id)
    state = RecordWriteState.reads.filter(pk=write_state_id).only("operation", "message", "reason_code").first()
    if state is None or state.operation != WriteOperation.DELETE:
        return
    for row in ProcessRunStep.objects.filter(pg_row_id=record_id, disposition=Disposition.ROLLED_BACK).select_related("run"):
        run = row.run
        if verdict == VerdictKind.REFUSED:
            with transaction.atomic():
                row.disposition = Disposition.CONFIRMED if row.refusal_code is None else Disposition.FAILED
                row.save(update_fields=["disposition", "updated_at"])
                if run.state == RunState.ROLLED_BACK:
                    run_end(run, RunState.FAILED, reason=(
                        f"the source refused the rollback delete of {row.record_type} {row.pg_row_id} "
                        f"(step {row.step_id!r}): {state.reason_code}: {state.message}; roll back again once fixed"))
        elif run.state == RunState.ROLLED_BACK:
            ProcessRun.objects.filter(pk=run.pk).update(reason=rolled_back_reason(run))


def wake_at(run_id: Any, at: datetime) -> None:
    """Queue a delivery of the run when the clock reaches ``at`` (django-q2's scheduler)."""
    Schedule.objects.create(
        func="processes.tasks.run_wake", args=repr(str(run_id)), schedule_type=Schedule.ONCE,
        next_run=at, repeats=1, name=f"wake {run_id} {at.isoformat()}",
    )


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
            run.pending_reason in (PendingReason.RUNNING, PendingReason.QUEUED)
            or (run.wait_deadline is not None and run.wait_deadline <= now)
            or (run.wake_at is not None and run.wake_at <= now)
            or (run.pending_reason == PendingReason.AWAITING_SOURCE and _verdict_in(run))
        ):
            due.append(run.pk)
    return due


def waits_sweep(now: datetime | None = None) -> int:
    """The sweeper's task: re-queue every due run. Returns how many."""
    due = runs_due(now)
    for run_id in due:
        run_redeliver(run_id)
    return len(due)


def _verdict_in(run: ProcessRun) -> bool:
    from processes.engine.waits import verdict_pending

    waiting = ProcessRunStep.objects.filter(run_id=run.pk, awaiting_verdict=True).first()
    return waiting is not None and not verdict_pending(waiting)
