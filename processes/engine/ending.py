"""Every way a delivery leaves a run: ended, waiting, or handed back. One door each."""
from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from processes.lanes import lane_enqueue
from processes.models import PendingReason, ProcessRun
from processes.status import RunMove, states_from, transition_check


def lease_seconds() -> int:
    return int(getattr(settings, "PROCESS_RUN_LEASE_S", 120))


def run_end(run: ProcessRun, state: str, *, reason: str | None = None, outstanding: int = 0) -> ProcessRun:
    """End the run: state, reason, outstanding, finished; the lease and any wait are cleared."""
    transition_check(run.state, state)
    now = timezone.now()
    run.state, run.reason, run.outstanding = state, reason, outstanding
    run.finished_at, run.pending_reason = now, PendingReason.NONE
    run.lease_owner, run.lease_until, run.wait_deadline, run.wake_at = "", None, None, None
    run.waiting_step, run.cancel_requested, run.rollback_requested = "", False, False
    run.save()
    return run


def run_wait(run: ProcessRun, *, pending_reason: str, deadline: datetime | None = None,
             wake_at: datetime | None = None, waiting_step: str = "") -> None:
    """Park the run (still ``running``) and give the worker back; a verdict or the clock re-queues it."""
    ProcessRun.objects.filter(pk=run.pk).update(
        pending_reason=pending_reason, wait_deadline=deadline, wake_at=wake_at, waiting_step=waiting_step,
        lease_owner="", lease_until=None, writes=run.writes, updated_at=timezone.now(),
    )
    run.pending_reason, run.wait_deadline, run.wake_at = pending_reason, deadline, wake_at
    run.waiting_step, run.lease_owner, run.lease_until = waiting_step, "", None


def run_redeliver(run_id, *, mode: str | None = None) -> None:
    """Queue another delivery of a run (a wake-up); the lease makes extra deliveries harmless."""
    with transaction.atomic():
        updated = ProcessRun.objects.filter(pk=run_id, state__in=states_from(RunMove.CLAIM)).update(
            delivery=F("delivery") + 1)
        if not updated:
            return
        run = ProcessRun.objects.only("delivery", "mode").get(pk=run_id)
        lane_enqueue(run_id=run_id, delivery=run.delivery, mode=mode or run.mode)
