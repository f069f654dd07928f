"""Firing schedules: every due schedule invokes its process once per due time.

``schedules_tick`` is the django-q2 entry point (a ``system.processes.schedules`` job registered by a
data migration runs it every minute); ``schedules_fire_due(now)`` is the same with the clock passed
in, which is how tests control time.

How one due time fires at most once, with any number of tickers running:
the schedule row carries ``next_fire_at``. A ticker *claims* a due schedule with one conditional
UPDATE — ``SET next_fire_at = <next after now> WHERE name = … AND next_fire_at = <the due time it
read>`` — in the same transaction that queues the run and records the firing. Only one UPDATE can
match; a second ticker's UPDATE waits for the first to commit (PostgreSQL re-checks the WHERE on
the new row; SQLite serialises writers) and matches nothing. The firing row is also unique per
(schedule, due time). A ticker that dies mid-way rolls the claim back, so the next tick fires it.

The next due time is computed from *now*, not from the due time just served: an instance that
was down for a day fires a missed schedule once when it comes back, not once per missed slot.

What a firing does (seed 000, "Keeping a long run going"):
- invokes the process as the instance's scheduler identity (``turbobase-scheduler``, a staff
  service user nobody can sign in as), with ``ProcessRun.schedule_name`` saying why the run exists;
- ``success`` as soon as the run is queued — the run's own outcome is on the run;
- ``skipped`` while the process or the instance is switched off (not a failure: not counted);
- ``failed`` when the input is not an object or fails the process's schema (checked on every
  firing), naming the field, with no run queued; five failures in a row pause the schedule and a
  success resets the count;
- either way the firing is recorded as a run in state ``refused`` (seed 004), its reason naming
  the switch or the field, and the firing names that run: it never runs, but it is seen;
- firing while an earlier run is still going just queues another run: rows are keyed, so two runs
  that reach one row write it once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from kernel.audit import audit_record
from processes.audit import ProcessAuditAction
from processes.codes import ProcessCode
from processes.errors import ProcessNotFound
from processes.invoke import refusal_prefix, run_refuse, run_start
from processes.models import RunState
from processes.schedules.cron import CronInvalid, cron_next
from processes.schedules.models import FiringOutcome, ProcessSchedule, ProcessScheduleFiring

logger = logging.getLogger(__name__)

SCHEDULER_USERNAME = "turbobase-scheduler"
MAX_FAILURES_IN_A_ROW = 5


def scheduler_user() -> Any:
    """The instance's administrator identity for runs nobody started: a staff service user with
    an unusable password (it never signs in; it only owns what schedules write)."""
    User = get_user_model()
    user = User.objects.filter(**{User.USERNAME_FIELD: SCHEDULER_USERNAME}).first()
    if user is not None:
        return user
    user = User(**{User.USERNAME_FIELD: SCHEDULER_USERNAME}, is_staff=True, is_active=True)
    user.set_unusable_password()
    try:
        with transaction.atomic():
            user.save()
    except IntegrityError:  # two tickers made it at once
        user = User.objects.get(**{User.USERNAME_FIELD: SCHEDULER_USERNAME})
    return user


@dataclass(frozen=True)
class Attempt:
    outcome: str
    run_id: Any = None
    field: str = ""
    message: str = ""


def _invoke(schedule: ProcessSchedule, *, user: Any) -> Attempt:
    body = schedule.body.get("input", {}) if schedule.is_input_given else {}
    try:
        with transaction.atomic():  # a savepoint: a fault leaves the claim in place
            if isinstance(body, dict):
                run = run_start(
                    process_id=schedule.process_id,
                    body=body,
                    user=user,
                    schedule_name=schedule.name,
                )
            else:
                run = run_refuse(
                    process_id=schedule.process_id,
                    body=body,
                    user=user,
                    schedule_name=schedule.name,
                    code=ProcessCode.INPUT_INVALID,
                    field="input",
                    message=f"must be a JSON object, not {type(body).__name__}",
                )
    except ProcessNotFound as exc:
        return Attempt(FiringOutcome.FAILED, field="body.process", message=exc.message)
    except Exception as exc:  # noqa: BLE001 — a fault counts as a failure, so five in a row pause it
        logger.exception("schedule %s: invoking %s failed", schedule.name, schedule.process_id)
        return Attempt(FiringOutcome.FAILED, message=f"{type(exc).__name__}: {exc}")
    if run.state != RunState.REFUSED:
        return Attempt(FiringOutcome.SUCCESS, run_id=run.run_id)
    # A refused run is kept (it says why nothing ran); the firing names it but queued nothing.
    message = (run.reason or "").removeprefix(refusal_prefix(run.refusal_code, run.refusal_field))
    if run.refusal_code == ProcessCode.PROCESS_DISABLED:
        return Attempt(FiringOutcome.SKIPPED, run_id=run.run_id, message=message)
    return Attempt(
        FiringOutcome.FAILED, run_id=run.run_id, field=run.refusal_field, message=message
    )


def _count(schedule: ProcessSchedule, attempt: Attempt) -> None:
    rows = ProcessSchedule.objects.filter(pk=schedule.pk)
    if attempt.outcome == FiringOutcome.SUCCESS:
        rows.update(consecutive_failures=0)
    elif attempt.outcome == FiringOutcome.FAILED:
        rows.update(consecutive_failures=F("consecutive_failures") + 1)
        where = f" ({attempt.field})" if attempt.field else ""
        reason = (
            f"paused after {MAX_FAILURES_IN_A_ROW} failed firings in a row; the last"
            f"{where}: {attempt.message}"
        )
        with transaction.atomic():
            paused = rows.filter(
                consecutive_failures__gte=MAX_FAILURES_IN_A_ROW, is_paused=False
            ).update(is_paused=True, paused_reason=reason)
            if paused:  # nobody paused it: the firing loop did, so the event has no actor
                audit_record(
                    actor=None,
                    action=ProcessAuditAction.SCHEDULE_PAUSED,
                    target=f"schedule:{schedule.pk}",
                    after={"isPaused": True},
                    reason=reason,
                )
    # A skip is neither: the schedule did nothing wrong, and nothing succeeded either.


def schedule_fire(
    schedule: ProcessSchedule, *, now: datetime, user: Any | None = None
) -> ProcessScheduleFiring | None:
    """Fire one schedule for the due time it was read with; None when another ticker claimed it."""
    due_at = schedule.next_fire_at
    if due_at is None or schedule.is_paused or due_at > now:
        return None
    try:
        next_at = cron_next(schedule.schedule_expr, schedule.schedule_tz, after=now)
    except CronInvalid as exc:  # a zone the instance's tz database later lost: stop, say why
        ProcessSchedule.objects.filter(pk=schedule.pk).update(
            is_paused=True, paused_reason=str(exc)
        )
        return None
    with transaction.atomic():
        claimed = ProcessSchedule.objects.filter(
            pk=schedule.pk, next_fire_at=due_at, is_paused=False
        ).update(next_fire_at=next_at, last_fired_at=now)
        if not claimed:
            return None
        attempt = _invoke(schedule, user=user or scheduler_user())
        firing = ProcessScheduleFiring.objects.create(
            schedule_name=schedule.name,
            due_at=due_at,
            fired_at=now,
            outcome=attempt.outcome,
            run_id=attempt.run_id,
            field=attempt.field,
            message=attempt.message,
        )
        _count(schedule, attempt)
    return firing


def schedules_fire_due(now: datetime) -> list[ProcessScheduleFiring]:
    """Fire every schedule due at ``now`` (at most once per due time); answer the firings made."""
    due = list(
        ProcessSchedule.objects.filter(is_paused=False, next_fire_at__lte=now).order_by(
            "next_fire_at", "name"
        )
    )
    if not due:
        return []
    user = scheduler_user()
    firings = []
    for schedule in due:
        try:
            firing = schedule_fire(schedule, now=now, user=user)
        except Exception:  # a database fault: the claim rolled back, so it fires at the next tick
            logger.exception("schedule %s could not fire", schedule.name)
            continue
        if firing is not None:
            firings.append(firing)
    return firings


def schedules_tick() -> int:
    """The django-q2 job: fire what is due now; answer how many fired."""
    return len(schedules_fire_due(timezone.now()))


@transaction.atomic
def schedule_resume(*, name: str, now: datetime, by: Any = None) -> bool:
    """Unpause a paused schedule (the admin's "resume"): failures reset, next due from ``now``."""
    schedule = ProcessSchedule.objects.select_for_update().filter(pk=name).first()
    if schedule is None or not schedule.is_paused:
        return False
    next_at = cron_next(schedule.schedule_expr, schedule.schedule_tz, after=now)
    ProcessSchedule.objects.filter(pk=name).update(
        is_paused=False, paused_reason="", consecutive_failures=0, next_fire_at=next_at
    )
    audit_record(
        actor=by,
        action=ProcessAuditAction.SCHEDULE_RESUMED,
        target=f"schedule:{name}",
        before={"isPaused": True, "pausedReason": schedule.paused_reason},
        after={"isPaused": False, "nextFireAt": next_at.isoformat()},
    )
    return True
