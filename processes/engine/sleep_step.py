"""A sleep step: park the run until a time, holding no worker, then record the step confirmed.

``{ id, sleep: '30s' | '15m' | '2h' | '30d' | (ctx) => string }`` writes no record. The first
delivery that reaches the step works out the duration (the author's function, if any, runs once
here) and parks the run ``awaitingTime`` with ``wait_deadline`` and ``wake_at`` set to now plus the
duration, ``waiting_step`` naming the step — so the due time is kept on the run, not in a worker.
Each lane's watch reads the ``wake_at`` index twice a second and delivers the run when it is due
(``engine.wakeups.wakeups_due``). A delivery that finds the run parked on this step writes the
step's ledger row ``confirmed`` once the time has come, and parks again on the same time if it
came early (a stray wake-up never shortens a sleep). A worker killed after parking loses nothing:
the time is on the run row; one killed before parking is re-delivered and works it out again.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from processes.codes import ProcessCode
from processes.contract import is_function
from processes.durations import duration_parse
from processes.engine.plan import PlannedStep
from processes.engine.runtime import ModuleRuntime, StepCodeFailed
from processes.engine.statuses import StepStatus
from processes.engine.step_record import StepResult, StepScope, record_step
from processes.models import Disposition


def sleep_parked_until(scope: StepScope, planned: PlannedStep) -> datetime | None:
    """The time an earlier delivery parked this step until, if the run is parked on it."""
    run = scope.run
    if run.waiting_step == planned.step_id and run.wait_deadline is not None:
        return run.wait_deadline
    return None


def sleep_duration_until(runtime: ModuleRuntime, planned: PlannedStep, ctx: dict) -> datetime:
    """When the sleep ends, from now: the step's duration, or what its function returned."""
    value = planned.definition["sleep"]
    if is_function(value):
        value = runtime.call(planned.path + ("sleep",), ctx)
    try:
        return timezone.now() + duration_parse(value)
    except ValueError as exc:
        raise StepCodeFailed(ProcessCode.SLEEP_DURATION_INVALID, f"sleep {exc}") from exc


def sleep_step_resume(scope: StepScope, planned: PlannedStep, until: datetime) -> StepResult:
    """The run was parked on this step: confirmed once ``until`` has come, else park again."""
    if timezone.now() < until:
        return StepResult(StepStatus.WAIT_TIME, retry_at=until)
    with transaction.atomic():
        row = record_step(
            scope, planned, disposition=Disposition.CONFIRMED, answer={"wakeAt": until.isoformat()}
        )
    return StepResult(StepStatus.DONE, row)


def sleep_step_start(
    scope: StepScope, planned: PlannedStep, ctx: dict, runtime: ModuleRuntime
) -> StepResult:
    """Work out the wake time (``when`` already passed) and ask the runner to park until it."""
    return StepResult(StepStatus.WAIT_TIME, retry_at=sleep_duration_until(runtime, planned, ctx))
