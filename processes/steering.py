"""Steering a run from outside: cancel, resume, roll back, retry, redirect. Open to the invoker
and administrators. A retry or a redirect starts a new run linked to the old one (``linked_from``,
``linked_how``); the old run is never changed by a retry, and only cancelled by a redirect."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from extensions.store import module_version
from kernel.audit import audit_record
from kernel.ids import uuid_or_none
from processes.audit import ProcessAuditAction
from processes.engine.ending import run_end
from processes.engine.plan import ForEachCapExceeded, plan_build
from processes.errors import (
    InputInvalid,
    ProcessIsMigration,
    RunNotFound,
    RunNotResumable,
    RunNotRetryable,
    RunNotRollbackable,
)
from processes.invoke import run_invoke
from processes.lanes import lane_enqueue
from processes.models import LinkHow, PendingReason, ProcessRun, RunState, SkipReason
from processes.status import MOVES, RunMove, states_from


def runs_visible(user: User) -> QuerySet[ProcessRun]:
    """Runs the user may see: their own; an administrator sees every run."""
    runs = ProcessRun.objects.all()
    return runs if user.is_staff else runs.filter(invoked_by=user)


def run_get(*, user: User, run_id: str) -> ProcessRun:
    parsed = uuid_or_none(run_id)
    run = (
        runs_visible(user).filter(pk=parsed).first() if parsed is not None else None
    )  # malformed: no run
    if run is None:
        raise RunNotFound(f"no run {run_id!r} that you can see", runId=str(run_id))
    return run


def _unreached(run: ProcessRun) -> int:
    """Steps the run never reached: the plan less what its ledger recorded."""
    definition = module_version(run.process_id, run.module_version).definition
    if definition.get("eachRow") is not None:
        return run.outstanding  # rows the last outstanding read listed that no slice finished
    try:
        planned = len(plan_build(definition, run.input, for_each_cap=10**9))
    except (ForEachCapExceeded, InputInvalid):
        return 0
    reached = run.ledger.filter(row_key="", superseded=0).exclude(
        skip_reason=SkipReason.NOT_REACHED
    )
    recorded = reached.values("step_id").distinct().count()
    return max(planned - recorded, 0)


@transaction.atomic
def run_cancel(*, user: User, run_id: str) -> ProcessRun:
    """A queued run never executes; a parked one ends now; a working one stops at its next boundary."""
    run = run_get(user=user, run_id=run_id)
    return run_stop(run.pk, actor=user, reason=f"cancelled by {user.get_username()}")


@transaction.atomic
def run_stop(run_pk: Any, *, actor: User | None, reason: str, code: str = "") -> ProcessRun:
    """The one cancel path (a person's cancel, a redirect, the run timeout): audited as ``actor``'s
    (None: the instance's); ``code`` is kept as the cancelled run's failure code (``run_timeout``).

    A queued run, or one no worker holds (parked, or its worker died), ends now with ``reason``;
    a working one is told to stop and its worker ends it at the next step boundary."""
    run = ProcessRun.objects.select_for_update().get(pk=run_pk)
    if run.is_terminal:
        return run
    audit_record(
        actor=actor,
        action=ProcessAuditAction.RUN_CANCELLED,
        target=f"run:{run.pk}",
        before={"state": run.state},
        after={"code": code} if code else None,
        reason=reason if actor is None else "",
    )
    if code:
        ProcessRun.objects.filter(pk=run.pk).update(refusal_code=code)
        run.refusal_code = code
    now = timezone.now()
    if run.state == RunState.QUEUED or not run.lease_until or run.lease_until < now:
        return run_end(run, RunState.CANCELLED, reason=reason, outstanding=_unreached(run))
    run.cancel_requested = True
    run.save(update_fields=["cancel_requested", "updated_at"])
    return run


def process_cancel_queued(*, user: User, process_id: str) -> int:
    """Cancel every queued run of one process (the caller's own; an administrator's: all)."""
    cancelled = 0
    for run_id in (
        runs_visible(user)
        .filter(process_id=process_id, state=RunState.QUEUED)
        .values_list("pk", flat=True)
    ):
        with transaction.atomic():
            run = ProcessRun.objects.select_for_update().get(pk=run_id)
            if run.state == RunState.QUEUED:
                audit_record(
                    actor=user,
                    action=ProcessAuditAction.RUN_CANCELLED,
                    target=f"run:{run.pk}",
                    before={"state": run.state},
                )
                run_end(
                    run,
                    RunState.CANCELLED,
                    reason=f"cancelled by {user.get_username()}",
                    outstanding=_unreached(run),
                )
                cancelled += 1
    return cancelled


def run_resume(*, user: User, run_id: str) -> ProcessRun:
    """Put a run that stopped with work left back on the queue at the step it stopped on."""
    run = run_get(user=user, run_id=run_id)
    definition = module_version(run.process_id, run.module_version).definition
    if definition.get("eachRow") is not None:
        raise ProcessIsMigration(
            "a migration is invoked again rather than resumed: its writes are keyed by source row",
            runId=str(run.pk),
            state=run.state,
        )
    with transaction.atomic():
        # One conditional update: of two quick resumes, exactly one finds the run committed.
        resumed = ProcessRun.objects.filter(
            pk=run.pk, state__in=states_from(RunMove.RESUME), outstanding__gt=0
        ).update(
            state=MOVES[RunMove.RESUME].target,
            pending_reason=PendingReason.QUEUED,
            reason=None,
            finished_at=None,
            wait_deadline=None,
            wake_at=None,
            waiting_step="",
            delivery=F("delivery") + 1,
            updated_at=timezone.now(),
        )
        run.refresh_from_db()
        if not resumed:
            raise RunNotResumable(
                f"only a committed run with work outstanding can be resumed; this run is {run.state}"
                + (" with nothing outstanding" if run.state == RunState.COMMITTED else ""),
                runId=str(run.pk),
                state=run.state,
            )
        audit_record(
            actor=user,
            action=ProcessAuditAction.RUN_RESUMED,
            target=f"run:{run.pk}",
            after={"state": run.state},
        )
        run.ledger.filter(skip_reason=SkipReason.NOT_REACHED).delete()
        lane_enqueue(run_id=run.pk, delivery=run.delivery, mode=run.mode)
    return run


def run_rollback(*, user: User, run_id: str) -> tuple[ProcessRun, bool]:
    """Queue the undo of a stopped run. Returns (run, queued): already rolled back → not queued."""
    run = run_get(user=user, run_id=run_id)
    if run.state == RunState.ROLLED_BACK:
        return run, False
    with transaction.atomic():
        updated = ProcessRun.objects.filter(
            Q(state__in=states_from(RunMove.ROLLBACK)), pk=run.pk
        ).update(
            state=MOVES[RunMove.ROLLBACK].target,
            pending_reason=PendingReason.QUEUED,
            rollback_requested=True,
            outstanding=0,
            rollback_cause=f"rolled back on request by {user.get_username()}",
            delivery=F("delivery") + 1,
            lease_owner="",
            lease_until=None,
            updated_at=timezone.now(),
        )
        run.refresh_from_db()
        if not updated:
            raise RunNotRollbackable(
                "a refused run never ran: there is nothing to roll back"
                if run.state == RunState.REFUSED
                else f"a run still {run.state} cannot be rolled back: cancel it first",
                runId=str(run.pk),
                state=run.state,
            )
        audit_record(
            actor=user,
            action=ProcessAuditAction.RUN_ROLLED_BACK,
            target=f"run:{run.pk}",
            after={"state": run.state},
        )
        lane_enqueue(run_id=run.pk, delivery=run.delivery, mode=run.mode)
    return run, True


# A retry starts the same input again: only a run that ended without doing what it was asked.
RETRYABLE = frozenset({RunState.FAILED, RunState.CANCELLED, RunState.ROLLED_BACK, RunState.REFUSED})


_LINK_AUDIT = {
    LinkHow.RETRY: ProcessAuditAction.RUN_RETRIED,
    LinkHow.REDIRECT: ProcessAuditAction.RUN_REDIRECTED,
}


def _linked_start(old: ProcessRun, *, body: Any, how: LinkHow, by: User) -> ProcessRun:
    """The new run linked to ``old`` (as ``old``'s invoker), audited as ``by``'s act."""
    new = run_invoke(
        process_id=old.process_id,
        body=body,
        user=old.invoked_by or by,
        linked_from=old,
        linked_how=how,
    )
    audit_record(
        actor=by,
        action=_LINK_AUDIT[how],
        target=f"run:{old.pk}",
        before={"state": old.state},
        after={"runId": str(new.pk)},
    )
    return new


def run_retry(*, user: User, run_id: str) -> ProcessRun:
    """Start a new run of the same process with the same input, linked to the old one (``retry``).

    The new run is invoked by the old run's invoker — an administrator who steers someone's run
    does not lend it an administrator's reach (the audit names who steered) — on the version
    deployed now, with a ledger of its own; its input is checked again (a schema that changed
    since answers 400). Any state but failed, cancelled, rolled_back or refused is 409
    ``process_run_not_retryable``."""
    old = run_get(user=user, run_id=run_id)
    with transaction.atomic():
        old = ProcessRun.objects.select_for_update().get(pk=old.pk)
        if old.state not in RETRYABLE:
            raise RunNotRetryable(
                f"only a run that ended {', '.join(sorted(RETRYABLE))} can be retried; "
                f"this run is {old.state}",
                runId=str(old.pk),
                state=old.state,
            )
        new = _linked_start(old, body=old.input, how=LinkHow.RETRY, by=user)
    return new


def run_redirect(*, user: User, run_id: str, body: Any) -> ProcessRun:
    """Start a new run of the same process with ``body`` as its input, linked to the old one
    (``redirect``), invoked as the old one was (see ``run_retry``), and cancel the old one as
    ``run_cancel`` does if it has not ended. One transaction: an input the schema refuses (400)
    or a switch that is off (409) changes nothing."""
    old = run_get(user=user, run_id=run_id)
    with transaction.atomic():
        old = ProcessRun.objects.select_for_update().get(pk=old.pk)
        new = _linked_start(old, body=body, how=LinkHow.REDIRECT, by=user)
        if not old.is_terminal:
            run_cancel(user=user, run_id=str(old.pk))
    return new
