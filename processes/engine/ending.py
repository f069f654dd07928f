"""Every way a delivery leaves a run: ended, waiting, or handed back. One door each.

Each is one conditional UPDATE of the columns it changes — never a save of a row read earlier,
which would put back whatever steering or a wake-up changed meanwhile (``delivery`` is bumped
with ``F()`` by them). Given the delivery's ``lease``, the UPDATE applies only while that
delivery still holds the run; a delivery that lost it raises ``LeaseLost`` and changes nothing.

A chain whose last step waits alone in the delivery's group ends in that step's own statement
instead: ``run_end_riding`` answers the ending's columns for the group's lease proof, and
``run_end_rode`` does the rest once the statement has committed. A park rides a lease proof the
same way (``run_wait_riding``, then ``run_let_go``): an awaitSource step's own statement, or a
park that reads the run's cancel request back in the same UPDATE.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from processes.engine.lease import Lease, LeaseLost
from processes.errors import IllegalTransition
from processes.events.models import EventWait, WaitState
from processes.human_tasks.models import HumanTask, TaskState
from processes.lanes import lane_enqueue
from processes.models import PendingReason, ProcessRun
from processes.observe import run_ended
from processes.settle import run_settled_notify
from processes.status import RunMove, states_from, transition_check


def _apply(run: ProcessRun, lease: Lease | None, changes: dict[str, Any]) -> None:
    """Write ``changes`` to the run row (only them) if we may, then mirror them on ``run``. A
    delivery letting go of the run adds its working time in the same statement."""
    # Steering and wake-ups (no lease): the state the caller decided on must still be the state.
    rows = (
        lease.owned()
        if lease is not None
        else ProcessRun.objects.filter(pk=run.pk, state=run.state)
    )
    worked = 0
    if lease is not None:
        changes = {**lease.carried, **changes}
    if lease is not None and changes.get("lease_owner") == "":
        lease.let_go()
        worked = lease.worked_take()
    if not rows.update(**changes, **worked_added(worked)):
        if lease is not None:
            raise LeaseLost(f"run {run.pk}: lease taken over before it could be left")
        raise IllegalTransition(f"run {run.pk} is no longer {run.state}")
    for name, value in changes.items():
        setattr(run, name, value)
    run.worked_ms += worked


def worked_added(worked_ms: int) -> dict[str, Any]:
    """The column change adding a delivery's working time to the run's (``F()``: a concurrent
    change to the row is kept). Only time a delivery held the run counts: one that lost it adds
    nothing, the delivery that took it over counts its own."""
    return {"worked_ms": F("worked_ms") + worked_ms} if worked_ms else {}


def run_end(
    run: ProcessRun,
    state: str,
    *,
    reason: str | None = None,
    outstanding: int = 0,
    lease: Lease | None = None,
    own_waits: bool = True,
) -> ProcessRun:
    """End the run: state, reason, outstanding, finished; the lease and any wait are cleared.
    ``own_waits=False``: its plan has no task or waitFor step, so it has no task or event wait
    to close (two statements fewer)."""
    changes = _end_columns(run, state, reason=reason, outstanding=outstanding)
    now = changes["finished_at"]
    if lease is not None:
        changes["writes"] = run.writes  # the delivery's count, from the ledger it wrote
    elif run.cancel_requested:  # a dead delivery's group cut by it may have left more (ledger.py)
        changes["writes"] = run.ledger.filter(counts_write=True).count()
    with transaction.atomic():
        _apply(run, lease, changes)
        if own_waits:
            _waits_close(run, state, now)
        run_settled_notify(run.pk, run.mode)  # a ?mode=sync request may be waiting on it
    run_ended(run, state)  # counted for /metrics
    return run


def _waits_close(run: ProcessRun, state: str, now: datetime) -> None:
    """No task outlives its run: one still open (the run was cancelled, or stopped) is closed.
    Nor a wait for an event: no event resumes an ended run."""
    HumanTask.objects.filter(run_id=run.pk, state=TaskState.OPEN).update(
        state=TaskState.CANCELLED,
        reason=f"its run ended {state} before anyone decided",
        decided_at=now,
    )
    EventWait.objects.filter(run_id=run.pk, state=WaitState.WAITING).update(
        state=WaitState.CLOSED, decided_at=now
    )


def _end_columns(
    run: ProcessRun, state: str, *, reason: str | None, outstanding: int
) -> dict[str, Any]:
    """The run row's columns as an ending leaves them (the lease and any wait cleared)."""
    transition_check(run.state, state)
    now = timezone.now()
    return {
        "state": state,
        "reason": reason,
        "outstanding": outstanding,
        "finished_at": now,
        "pending_reason": PendingReason.NONE,
        "lease_owner": "",
        "lease_until": None,
        "wait_deadline": None,
        "wake_at": None,
        "waiting_step": "",
        "cancel_requested": False,
        "rollback_requested": False,
        "updated_at": now,
    }


def run_end_riding(run: ProcessRun, lease: Lease, state: str) -> dict[str, Any]:
    """The columns that end the run ``state``, for the lease proof of the statement that writes
    the delivery's last step (``engine.grouping``'s group of that one step): the step and the
    run's end commit together, or neither does. Only for a run with no task or event wait of its
    own to close (``run_end`` closes them in its transaction). The working time is written as a
    value, not added: while the lease is this delivery's, no one else changes it."""
    changes = _end_columns(run, state, reason=None, outstanding=0)
    changes["worked_ms"] = run.worked_ms + lease.worked_ms()
    return changes


def run_end_rode(run: ProcessRun, lease: Lease, changes: dict[str, Any]) -> None:
    """The statement written with ``run_end_riding``'s ``changes`` committed: the delivery has let
    go; mirror them on ``run``, tell a waiting ``?mode=sync`` request and count the run."""
    run_let_go(run, lease, changes)
    run_settled_notify(run.pk, run.mode)  # after the commit: delivered at once
    run_ended(run, changes["state"])


def run_let_go(run: ProcessRun, lease: Lease, changes: dict[str, Any]) -> None:
    """A statement of this delivery wrote ``changes`` that leave the run (an end, a park) with the
    working time as a value: stop the heartbeat, never add that time again, mirror them on ``run``."""
    lease.let_go()
    lease.worked_take()
    for name, value in changes.items():
        setattr(run, name, value)


def wait_columns(
    run: ProcessRun,
    *,
    pending_reason: str,
    deadline: datetime | None = None,
    wake_at: datetime | None = None,
    waiting_step: str = "",
    transient_attempts: int | None = None,
) -> dict[str, Any]:
    """The run row's columns as a park leaves them (still ``running``, the lease given back)."""
    changes: dict[str, Any] = {
        "pending_reason": pending_reason,
        "wait_deadline": deadline,
        "wake_at": wake_at,
        "waiting_step": waiting_step,
        "lease_owner": "",
        "lease_until": None,
        "writes": run.writes,
        "updated_at": timezone.now(),
    }
    if transient_attempts is not None:
        changes["transient_attempts"] = transient_attempts
    return changes


def run_wait(run: ProcessRun, *, lease: Lease | None = None, **wait: Any) -> None:
    """Park the run (still ``running``) and give the worker back; a verdict or the clock re-queues
    it. ``wait``: ``wait_columns``'s."""
    _apply(run, lease, wait_columns(run, **wait))


def run_wait_riding(run: ProcessRun, lease: Lease, **wait: Any) -> dict[str, Any]:
    """The columns that park the run, for a lease proof of this delivery (the step's own statement,
    or a park that reads the cancel request back): ``run_let_go`` once it is written. The working
    time is written as a value, as ``run_end_riding`` does."""
    changes = wait_columns(run, **wait)
    changes["worked_ms"] = run.worked_ms + lease.worked_ms()
    return changes


def run_hand_back(run: ProcessRun, *, lease: Lease | None) -> None:
    """Leave a run between steps (still ``running``) and send the same delivery to its lane, whose
    worker claims it and resumes at the first unrecorded step: a sync run past its budget."""
    with transaction.atomic():
        _apply(
            run,
            lease,
            {
                "lease_owner": "",
                "lease_until": None,
                "writes": run.writes,
                "updated_at": timezone.now(),
            },
        )
        lane_enqueue(run_id=run.pk, delivery=run.delivery, mode=run.mode)


def run_redeliver(run_id, *, mode: str | None = None) -> None:
    """Queue another delivery of a run (a wake-up); the lease makes extra deliveries harmless.
    The number goes up, so a delivery queued before this one is stale when it arrives."""
    with transaction.atomic():
        updated = ProcessRun.objects.filter(pk=run_id, state__in=states_from(RunMove.CLAIM)).update(
            delivery=F("delivery") + 1
        )
        if not updated:
            return
        run = ProcessRun.objects.only("delivery", "mode").get(pk=run_id)
        lane_enqueue(run_id=run_id, delivery=run.delivery, mode=mode or run.mode)
