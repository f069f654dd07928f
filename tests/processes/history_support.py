"""Runs with a history, made as the engine leaves them: a row in each state, ledger rows, an event
wait, a task — for the purge tests, whose subject is what goes and what stays, not how runs ran."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from processes.events.models import EventWait, WaitState
from processes.human_tasks.models import HumanTask, TaskState
from processes.models import (
    TERMINAL_STATES,
    PendingReason,
    ProcessRun,
    ProcessRunStep,
    RunState,
)


def days_ago(days: float) -> datetime:
    return timezone.now() - timedelta(days=days)


def history_run(
    state: str = RunState.COMMITTED,
    *,
    finished: datetime | None = None,
    ledger: int = 2,
    wait: bool = False,
    task: bool = False,
    **fields: Any,
) -> ProcessRun:
    """A run in ``state`` finished at ``finished`` (an unfinished run keeps ``finished`` if given:
    a rollback queued on a run that had ended still carries its old finish time)."""
    ended = state in TERMINAL_STATES
    run = ProcessRun.objects.create(
        process_id=fields.pop("process_id", "t:history"),
        module_version=1,
        state=state,
        pending_reason=PendingReason.NONE if ended else fields.pop("pending_reason", "queued"),
        finished_at=finished,
        **fields,
    )
    if finished is not None:  # created before it finished
        ProcessRun.objects.filter(pk=run.pk).update(created_at=finished - timedelta(minutes=1))
    for sequence in range(1, ledger + 1):
        ProcessRunStep.objects.create(
            run=run,
            sequence=sequence,
            step_id=f"step{sequence}",
            record_type="salesOrder",
            disposition="confirmed",
        )
    if wait:
        EventWait.objects.create(
            run=run,
            step_id="paid",
            event_name="order.paid",
            after=run.created_at,
            expires_at=run.created_at + timedelta(days=1),
            state=WaitState.WAITING if not ended else WaitState.CLOSED,
        )
    if task:
        HumanTask.objects.create(
            run=run,
            process_id=run.process_id,
            step_id="approve",
            assignee="bob",
            title="Approve",
            state=TaskState.OPEN if not ended else TaskState.COMPLETED,
        )
    run.refresh_from_db()
    return run


def run_ids() -> set[str]:
    return {str(pk) for pk in ProcessRun.objects.values_list("pk", flat=True)}
