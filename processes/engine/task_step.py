"""A task step: make the task for a person, park the run, and record what they decided.

``{ id, task: { assignee, title, details?, timeout? } }`` writes no record. The first delivery
that reaches the step works out the title, details and assignee (the author's functions run once,
before any transaction) and makes the task — one per run and step, so a delivery that dies here
and is sent again finds it — then the run parks ``awaitingAction`` with the timeout as its due
time. A later delivery (the decision's wake-up, or the timeout's) finds the task decided and writes
the step's one ledger row from it: ``confirmed`` with the output, or ``failed`` with
``TASK_REJECTED`` (the reason) or ``TASK_EXPIRED``. The row and the unique (run, step, row,
visit) ledger key make the decision count once, however many deliveries look. A task closed
because its run stopped (a run's ending closes its open tasks) is opened again if the run is
resumed.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from kernel.errors import InvalidRequest
from kernel.input import data_check
from kernel.text import text_clean, text_problem
from processes.codes import ProcessCode
from processes.contract import is_function
from processes.durations import duration_parse
from processes.engine.ledger import Refused
from processes.engine.plan import PlannedStep
from processes.engine.runtime import ModuleRuntime, StepCodeFailed
from processes.engine.statuses import StepStatus
from processes.engine.step_record import StepResult, StepScope, record_step, step_wait_open
from processes.human_tasks.models import HumanTask, TaskState
from processes.human_tasks.service import assignee_exists, task_expire, task_reopen
from processes.models import Disposition

TITLE_MAX_CHARS = 500


def task_of(scope: StepScope, planned: PlannedStep) -> HumanTask | None:
    """The task an earlier delivery made for this step, if any."""
    return HumanTask.objects.filter(run_id=scope.run.pk, step_id=planned.step_id).first()


def _text(runtime: ModuleRuntime, planned: PlannedStep, ctx: dict, key: str) -> str:
    value = planned.definition["task"][key]
    if is_function(value):
        value = runtime.call(planned.path + ("task", key), ctx)
    code = ProcessCode.TASK_TITLE_INVALID if key == "title" else ProcessCode.TASK_ASSIGNEE_UNKNOWN
    if not isinstance(value, str) or not value.strip():
        raise StepCodeFailed(code, f"task.{key} must be a non-empty string, not {value!r}")
    if key == "assignee" and text_problem(value):  # a NUL cannot even be looked up
        raise StepCodeFailed(code, f"task.assignee {value!r} {text_problem(value)}")
    return value.strip()


def _describe(runtime: ModuleRuntime, planned: PlannedStep, ctx: dict) -> dict[str, Any]:
    task = planned.definition["task"]
    title = text_clean(_text(runtime, planned, ctx, "title"), TITLE_MAX_CHARS)
    assignee = _text(runtime, planned, ctx, "assignee")
    if not assignee_exists(assignee):
        raise StepCodeFailed(
            ProcessCode.TASK_ASSIGNEE_UNKNOWN,
            f"task.assignee {assignee!r} is no active user and no group: nobody could decide it",
        )
    details = None
    if task.get("details") is not None:
        details = runtime.call(planned.path + ("task", "details"), ctx)
        if details is not None and not isinstance(details, dict):
            raise StepCodeFailed(
                ProcessCode.TASK_DETAILS_INVALID, "task.details must return an object or null"
            )
        try:  # stored as JSON and shown to people: storable text only, as any request body
            data_check(details, path="task.details")
        except InvalidRequest as exc:
            raise StepCodeFailed(ProcessCode.TASK_DETAILS_INVALID, exc.message) from None
    timeout = task.get("timeout")
    expires_at = timezone.now() + duration_parse(timeout) if timeout else None
    return {"title": title, "assignee": assignee, "details": details, "expires_at": expires_at}


def task_step_start(
    scope: StepScope, planned: PlannedStep, ctx: dict, runtime: ModuleRuntime
) -> StepResult:
    """Make the step's task (``when`` already passed); answers a ``StepResult`` that waits."""
    task = step_wait_open(
        scope,
        planned,
        HumanTask,
        field="task",
        describe=lambda: {"process_id": scope.run.process_id, **_describe(runtime, planned, ctx)},
    )
    return task if isinstance(task, StepResult) else StepResult(StepStatus.WAIT_ACTION, task=task)


def task_step_resume(scope: StepScope, planned: PlannedStep, task: HumanTask) -> StepResult:
    """The step's task exists: wait on, or write the step's ledger row from the decision."""
    if task.state == TaskState.CANCELLED:
        # Closed when its run stopped with this step outstanding (a switch, a ceiling), and the
        # run was resumed: the same task is asked again, its timeout counted from now.
        timeout = planned.definition["task"].get("timeout")
        task = task_reopen(
            task, expires_at=timezone.now() + duration_parse(timeout) if timeout else None
        )
    if task.state == TaskState.OPEN and task.expires_at and task.expires_at <= timezone.now():
        task = task_expire(task)
    if task.state == TaskState.OPEN:
        return StepResult(StepStatus.WAIT_ACTION, task=task)
    who = task.decided_by.get_username() if task.decided_by else "nobody"
    if task.state == TaskState.COMPLETED:
        with transaction.atomic():
            row = record_step(scope, planned, disposition=Disposition.CONFIRMED, answer=task.output)
        return StepResult(StepStatus.DONE, row)
    if task.state == TaskState.REJECTED:
        refusal = Refused(
            ProcessCode.TASK_REJECTED, "reason", f"{task.title!r} rejected by {who}: {task.reason}"
        )
    else:  # expired (a closed task was opened again above)
        refusal = Refused(ProcessCode.TASK_EXPIRED, "timeout", f"{task.title!r}: {task.reason}")
    with transaction.atomic():
        row = record_step(scope, planned, disposition=Disposition.FAILED, refusal=refusal)
    return StepResult(StepStatus.FAILED, row)
