"""Waking the outbound worker: django-q2 tasks now, or a one-off schedule for a retry later.

A retry further off than a couple of seconds is a ``Schedule.ONCE`` row rather than a sleeping
worker: a worker asleep on one type's backoff is a worker another type cannot use. The cluster's
scheduler looks at schedules about every 30 s, so such a retry may run up to that much late —
acceptable for a backoff, and the price of never holding a worker. Shorter waits are slept in
the drain (``SOURCES_INLINE_RETRY_SECONDS``), where the type is blocked anyway.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction
from django_q.conf import Conf
from django_q.models import Schedule
from django_q.tasks import async_task

from sources.lanes import lane_is_held

logger = logging.getLogger(__name__)

DRAIN_TASK = "sources.tasks.outbound_drain_task"
SWEEP_TASK = "sources.tasks.outbound_sweep_task"
SWEEP_SCHEDULE = "system.sources.sweep"
TASK_GROUP = "sources.outbound"


def retry_schedule_name(record_type: str) -> str:
    return f"system.sources.retry.{record_type}"


def outbound_enqueue(*, record_type: str) -> str:
    """Queue one drain of ``record_type`` on the ``turbobase`` cluster (a no-op drain is cheap:
    it finds the lane taken or empty)."""
    # Successes are not kept: every committed write wakes a drain, and the write state is the record.
    # The cluster is named: without it django-q2 queues on the cluster of the process that asks
    # (``Q_CLUSTER_NAME``), and a process step's write would put its drain on a run lane, where
    # drains queue behind migration slices and run deliveries wait behind drains.
    return async_task(
        DRAIN_TASK,
        record_type,
        cluster=Conf.PREFIX,
        group=TASK_GROUP,
        save=False,
        task_name=f"outbound drain {record_type}",
    )


def outbound_wake(*, record_type: str) -> None:
    """A write of ``record_type`` committed: make sure a drain will see it.

    Skipped while a drain holds the lane: that drain sends everything due and re-checks after it
    lets go, so the write cannot be stranded. Never raises — the write is committed already; if
    the broker is down, the periodic sweep finds the write.
    """
    try:
        if not lane_is_held(record_type=record_type):
            outbound_enqueue(record_type=record_type)
    except Exception:
        logger.exception("could not wake the outbound drain for %s; the sweep will", record_type)


@transaction.atomic
def outbound_schedule_retry(*, record_type: str, at: datetime) -> Schedule:
    """Run a drain of ``record_type`` at ``at`` (earliest of any retry already scheduled)."""
    existing = (
        Schedule.objects.select_for_update().filter(name=retry_schedule_name(record_type)).first()
    )
    if existing is not None:
        if existing.next_run is None or at < existing.next_run:
            existing.next_run = at
            existing.save(update_fields=["next_run"])
        return existing
    return Schedule.objects.create(
        name=retry_schedule_name(record_type),
        func=DRAIN_TASK,
        args=repr((record_type,)),
        schedule_type=Schedule.ONCE,
        repeats=-1,
        next_run=at,
    )
