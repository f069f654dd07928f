"""Drive one local run to its end: what the workers, the lanes' watch, the outbound worker, the
people and the connected systems do, done here in a loop, with the clock jumped to each due time.

Each round sends the events whose virtual time has come, decides the open tasks the fixtures
answer, drains every outbound queue (the verdicts file answering), and performs one delivery of
every run a worker would pick up now (queued, woken, or due: ``engine.wakeups.runs_due``). When a
round moves nothing, the clock jumps to the earliest due time still ahead — a run's ``wake_at`` or
wait deadline, a lease's end, an outbound retry, a task's timeout, the next scripted event — and
the rounds go on. The loop stops when the run has ended and nothing moves, or when nothing is due
any more (a run left waiting for something no file provides: its pending reason says what).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from django.contrib.auth.models import Group, User
from django.db import connection
from django.db.models import Min
from django.test import TestCase

from processes.engine.runner import run_deliver
from processes.engine.wakeups import runs_due
from processes.events.service import event_send
from processes.human_tasks.models import HumanTask, TaskState
from processes.human_tasks.service import task_complete, task_reject
from processes.local_test.clock import VirtualClock
from processes.local_test.files import ScriptedEvent, TaskAnswer
from processes.models import ProcessRun, RunState
from records.models import RecordWriteState, WriteStatus
from sources.outbound import outbound_drain

MAX_ROUNDS = 10_000  # a run that still moves after this many rounds is looping: stop, report it
GROUP_PREFIX = "group:"


@contextmanager
def commit_hooks_run() -> Iterator[None]:
    """Run ``on_commit`` callbacks (verdict signals, wake-ups) as a real commit would, also when
    the caller holds a transaction open (pytest-django's ``db``), where they would never fire."""
    if connection.in_atomic_block:
        with TestCase.captureOnCommitCallbacks(execute=True):
            yield
    else:
        yield


def outbound_drain_all(*, never: set[str]) -> bool:
    """Send every due pending write, except of the types the source never answers."""
    moved = False
    types = set(
        RecordWriteState.reads.filter(status=WriteStatus.PENDING).values_list(
            "record_type", flat=True
        )
    )
    for record_type in sorted(types - never):
        with commit_hooks_run():
            report = outbound_drain(record_type=record_type)
        moved = moved or bool(report.sent)
    return moved


def _fingerprint(run_id: Any) -> tuple:
    run = ProcessRun.objects.get(pk=run_id)
    dispositions = tuple(run.ledger.order_by("id").values_list("disposition", flat=True))
    return (
        run.state,
        run.pending_reason,
        run.waiting_step,
        run.wake_at,
        run.wait_deadline,
        dispositions,
    )


def runs_deliver(now: datetime) -> bool:
    """One delivery of every run a worker would take now; whether any of them changed."""
    queued = list(ProcessRun.objects.filter(state=RunState.QUEUED).values_list("pk", flat=True))
    moved = False
    for run_id in dict.fromkeys(queued + runs_due(now)):
        before = _fingerprint(run_id)
        with commit_hooks_run():
            run_deliver(str(run_id))
        moved = moved or before != _fingerprint(run_id)
    return moved


def decider_for(assignee: str, answer: TaskAnswer) -> User | None:
    """Who decides a task: the answer's ``by``, else the assignee, else one of the group's."""
    if answer.by:
        return User.objects.filter(username=answer.by).first()
    if assignee.startswith(GROUP_PREFIX):
        return (
            User.objects.filter(groups__name=assignee[len(GROUP_PREFIX) :]).order_by("pk").first()
        )
    return User.objects.filter(username=assignee).first()


def tasks_decide(answers: dict[str, TaskAnswer]) -> bool:
    """Decide each open task the fixtures answer (by its step id, or its last part in a group)."""
    moved = False
    for task in HumanTask.objects.filter(state=TaskState.OPEN).order_by("created_at"):
        answer = answers.get(task.step_id) or answers.get(task.step_id.rsplit(":", 1)[-1])
        user = decider_for(task.assignee, answer) if answer else None
        if answer is None or user is None:
            continue  # nobody answers it here: the run waits, as it would for a person
        with commit_hooks_run():
            if answer.reject is not None:
                task_reject(user=user, task_id=str(task.pk), reason=answer.reject)
            else:
                task_complete(user=user, task_id=str(task.pk), output=answer.output)
        moved = True
    return moved


class LocalDriver:
    """The loop of one local run (see the module docstring)."""

    def __init__(
        self,
        *,
        clock: VirtualClock,
        user: User,
        events: tuple[ScriptedEvent, ...],
        tasks: dict[str, TaskAnswer],
        never: set[str],
    ) -> None:
        self.clock = clock
        self.user = user
        self.events = list(events)
        self.tasks = tasks
        self.never = never
        self.started = clock.now()

    def drive(self, run_id: Any) -> None:
        """Rounds until the run has ended and settled, or nothing is due any more."""
        for _ in range(MAX_ROUNDS):
            moved = self.events_send()
            moved = tasks_decide(self.tasks) or moved
            moved = outbound_drain_all(never=self.never) or moved
            moved = runs_deliver(self.clock.now()) or moved
            if moved:
                continue
            if ProcessRun.objects.get(pk=run_id).is_terminal:
                return
            due = self.next_due()
            if due is None:
                return  # waiting for something no file provides
            self.clock.advance_to(due)
        raise RuntimeError(f"the run was still moving after {MAX_ROUNDS} rounds (a loop?)")

    def events_send(self) -> bool:
        sent = False
        while self.events and self.started + self.events[0].at <= self.clock.now():
            event = self.events.pop(0)
            sender = User.objects.get(username=event.sender) if event.sender else self.user
            with commit_hooks_run():
                event_send(sender=sender, name=event.name, data=event.data, key=event.key)
            sent = True
        return sent

    def next_due(self) -> datetime | None:
        """The earliest due time after now: what the clock jumps to when nothing moves."""
        now = self.clock.now()
        going = ProcessRun.objects.filter(state=RunState.RUNNING)
        ahead = [
            *(
                going.filter(**{f"{column}__gt": now}).aggregate(at=Min(column))["at"]
                for column in ("wake_at", "wait_deadline", "lease_until")
            ),
            HumanTask.objects.filter(state=TaskState.OPEN, expires_at__gt=now).aggregate(
                at=Min("expires_at")
            )["at"],
            RecordWriteState.reads.filter(status=WriteStatus.PENDING, next_attempt_at__gt=now)
            .exclude(record_type__in=self.never)
            .aggregate(at=Min("next_attempt_at"))["at"],
        ]
        if self.events:
            ahead.append(self.started + self.events[0].at)
        times = [t for t in ahead if t is not None and t > now]
        return min(times) if times else None


def users_ensure(names: dict[str, dict[str, Any]]) -> dict[str, User]:
    """The local run's people: each name a user (its groups and admin flag from the fixtures)."""
    users = {}
    for name, spec in names.items():
        user = User.objects.filter(username=name).first()
        if user is None:
            user = User.objects.create_user(username=name)
            user.set_unusable_password()
        user.is_staff = user.is_superuser = bool(spec.get("admin"))
        user.save()
        for group in spec.get("groups") or []:
            user.groups.add(Group.objects.get_or_create(name=str(group))[0])
        users[name] = user
    return users
