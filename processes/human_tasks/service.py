"""Who sees a task, and deciding one exactly once.

A task is the assignee's: the user it names, or anyone in the Django auth group ``group:<name>``
names. Everyone reads their own and their groups' tasks; an administrator reads every task but,
like anyone, decides only their own and their groups' (403 ``task_not_assigned`` otherwise). A task
somebody may not read answers 404, as a task that does not exist does: nobody learns another's.

Deciding takes the task's row lock and makes one conditional UPDATE from ``open`` (and not past its
timeout, and while its run is still going): of two people completing at once, one moves it and the
other is told 409 with its state. The same transaction keeps the audit event and wakes the run —
moved back to ``queued`` (waiting for a worker) with its delivery number bumped and a delivery sent
once it commits — so a decision is never kept without its wake-up, and a wake-up lost with a host is sent again by the
lanes' watch like any lost delivery (``engine.redelivery``).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.contrib.auth.models import Group, User
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from kernel.audit import audit_record
from kernel.ids import uuid_or_none
from processes.audit import ProcessAuditAction
from processes.engine.ending import run_redeliver
from processes.errors import TaskDecided, TaskNotAssigned, TaskNotFound
from processes.human_tasks.models import GROUP_PREFIX, HumanTask, TaskState
from processes.models import PendingReason, ProcessRun, RunState

# What a task's output (the JSON a person answers with) may weigh, encoded; a rejection's reason.
TASK_OUTPUT_MAX_CHARS = 100_000
TASK_REASON_MAX_CHARS = 2_000
_RUN_GOING = (RunState.QUEUED, RunState.RUNNING)


def assignee_labels(user: User) -> list[str]:
    """Every ``assignee`` that means ``user``: their username and ``group:<name>`` of each group."""
    groups = user.groups.values_list("name", flat=True)
    return [user.get_username(), *(f"{GROUP_PREFIX}{name}" for name in groups)]


def tasks_assigned(user: User) -> QuerySet[HumanTask]:
    """The user's own tasks and their groups' — what their inbox lists."""
    return HumanTask.objects.filter(assignee__in=assignee_labels(user))


def tasks_visible(user: User) -> QuerySet[HumanTask]:
    """What ``GET /v1/tasks`` lists: the user's own and their groups'; an administrator's, all."""
    return HumanTask.objects.all() if user.is_staff else tasks_assigned(user)


def tasks_open(user: User) -> QuerySet[HumanTask]:
    """The user's tasks still waiting for a decision (their run still going, not timed out)."""
    now = timezone.now()
    return (
        tasks_assigned(user)
        .filter(state=TaskState.OPEN, run__state__in=_RUN_GOING)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
    )


def task_state_shown(task: HumanTask, now: datetime | None = None) -> str:
    """The state to answer: an open task past its timeout is ``expired`` already — its run's
    wake-up (due at that instant) records it within a second, and nobody may decide it now."""
    if (
        task.state == TaskState.OPEN
        and task.expires_at
        and task.expires_at <= (now or timezone.now())
    ):
        return TaskState.EXPIRED
    return task.state


def assignee_exists(assignee: str) -> bool:
    """Whether someone can ever see the task: an active user, or a group that exists."""
    if assignee.startswith(GROUP_PREFIX):
        return Group.objects.filter(name=assignee[len(GROUP_PREFIX) :]).exists()
    return User.objects.filter(username=assignee, is_active=True).exists()


def task_get(*, user: User, task_id: str) -> HumanTask:
    parsed = uuid_or_none(task_id)
    task = (
        tasks_visible(user).select_related("run").filter(pk=parsed).first()
        if parsed is not None
        else None
    )
    if task is None:
        raise TaskNotFound(f"no task {task_id!r} that is yours", taskId=str(task_id))
    return task


def _decide(*, user: User, task_id: str, state: TaskState, output: Any, reason: str) -> HumanTask:
    task = task_get(user=user, task_id=task_id)
    if task.assignee not in assignee_labels(user):
        raise TaskNotAssigned(
            f"task {task.pk} is assigned to {task.assignee}: only they decide it",
            taskId=str(task.pk),
        )
    now = timezone.now()
    with transaction.atomic():
        # The task's row lock (PostgreSQL) orders two deciders: the second reads the first's
        # decision. The UPDATE is conditional on the task's own columns too — never through a
        # join, whose subquery PostgreSQL would not re-check after waiting for that lock.
        HumanTask.objects.select_for_update().filter(pk=task.pk).first()
        run_going = not ProcessRun.objects.only("state").get(pk=task.run_id).is_terminal
        decided = run_going and bool(
            HumanTask.objects.filter(pk=task.pk, state=TaskState.OPEN)
            .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
            .update(state=state, output=output, reason=reason, decided_by=user, decided_at=now)
        )
        if decided:
            audit_record(
                actor=user,
                action=(
                    ProcessAuditAction.TASK_COMPLETED
                    if state == TaskState.COMPLETED
                    else ProcessAuditAction.TASK_REJECTED
                ),
                target=f"task:{task.pk}",
                before={"state": TaskState.OPEN, "runId": str(task.run_id), "step": task.step_id},
                after={
                    "state": state,
                    **({"output": output} if state == TaskState.COMPLETED else {}),
                },
                reason=reason,
            )
            _run_wake(task)
    task.refresh_from_db()
    if not decided:
        shown = task_state_shown(task, now)
        run = ProcessRun.objects.only("state").get(pk=task.run_id)
        if shown == TaskState.OPEN:  # only its run ended under it (an engine fault)
            message = f"task {task.pk}: its run ended {run.state}; nothing waits for it any more"
        else:
            message = f"task {task.pk} is already {shown}; nothing was changed"
        raise TaskDecided(message, taskId=str(task.pk), state=shown)
    return task


def _run_wake(task: HumanTask) -> None:
    """Inside the decision's transaction: the parked run waits for a worker again, and gets one.
    A run not parked yet (its delivery is still on its way to park) is sent a delivery anyway,
    and that delivery looks at the task again once parked (``ChainRunner.wait_action``)."""
    ProcessRun.objects.filter(
        pk=task.run_id,
        state=RunState.RUNNING,
        pending_reason=PendingReason.AWAITING_ACTION,
        waiting_step=task.step_id,
    ).update(pending_reason=PendingReason.QUEUED, wake_at=None, updated_at=timezone.now())
    run_redeliver(task.run_id)


def task_complete(*, user: User, task_id: str, output: Any) -> HumanTask:
    """Complete the task with ``output`` (any JSON): the run goes on with ``ctx.steps[id].output``."""
    return _decide(user=user, task_id=task_id, state=TaskState.COMPLETED, output=output, reason="")


def task_reject(*, user: User, task_id: str, reason: str) -> HumanTask:
    """Reject the task: its step fails ``TASK_REJECTED`` with ``reason``; ``onRefused`` decides."""
    return _decide(user=user, task_id=task_id, state=TaskState.REJECTED, output=None, reason=reason)


def task_expire(task: HumanTask, *, now: datetime | None = None) -> HumanTask:
    """Expire an open task whose timeout came (the engine, at the run's wake-up): one conditional
    UPDATE, so a decision that won just before is kept. Answers the task as it now is."""
    now = now or timezone.now()
    HumanTask.objects.filter(pk=task.pk, state=TaskState.OPEN, expires_at__lte=now).update(
        state=TaskState.EXPIRED,
        reason=f"nobody decided it by {task.expires_at:%Y-%m-%d %H:%M:%S} UTC (its timeout)",
        decided_at=now,
    )
    task.refresh_from_db()
    return task


def task_reopen(task: HumanTask, *, expires_at: datetime | None) -> HumanTask:
    """Open again a task its run's ending closed, now that the run is resumed (the engine)."""
    HumanTask.objects.filter(pk=task.pk, state=TaskState.CANCELLED).update(
        state=TaskState.OPEN, reason="", decided_at=None, expires_at=expires_at
    )
    task.refresh_from_db()
    return task


def output_size_problem(output: Any) -> str | None:
    """Why ``output`` is too large to keep, or None."""
    size = len(json.dumps(output, ensure_ascii=False))
    if size > TASK_OUTPUT_MAX_CHARS:
        return f"is {size} characters as JSON, over the {TASK_OUTPUT_MAX_CHARS} a task keeps"
    return None
