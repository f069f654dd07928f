"""Sending a lost delivery again, within the lease — on any broker.

A delivery can be lost with a worker host: django-q2's Redis broker forgets a task once a
cluster has taken it, and its ORM broker hands a taken task out again only after the task
``retry`` (longer than the task timeout: many minutes). A cluster also prefetches tasks into
memory. So neither broker is trusted with redelivery; the run row is. Every lane's cluster runs
``redelivery_watch`` beside its workers (``manage.py qcluster``), and every few seconds it sends
again, with the same delivery number:

- a ``queued`` run whose delivery was handed to the broker (``enqueued_at``) a lease ago, never
  claimed, and no longer waiting in the broker — its task was taken and lost, or vanished. Both
  brokers hand tasks out oldest first, so a run sent before the oldest task still waiting in its
  lane's queue is no longer in it (``lane_waiting_since``); a long backlog is left alone;
- a ``running`` run between steps (not parked on a wait) whose lease ran out — its worker died
  (a live delivery renews its lease with a heartbeat, so it is never taken from it).

Sending again is idempotent: the conditional UPDATE that marks the re-send (``enqueued_at``
compared with the value read) lets one host's watch win per lease; the claim lets one delivery
hold the run; and the ledger makes a resumed run skip every recorded step. A run a live cluster
has prefetched but not started for a lease may get a second task; it finds the run claimed.
Parked runs whose due time (``wake_at``) has come are delivered by the same watch, read from
that index twice a second (``engine.wakeups.wakeups_due``); the minute sweep is the safety net.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

from django.db import close_old_connections, connection, transaction
from django.db.models import F, Q
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.brokers.orm import ORM
from django_q.brokers.redis_broker import Redis
from django_q.models import OrmQ
from django_q.signing import SignedPackage

from kernel.deployment import redelivery_seconds
from kernel.ids import uuid_or_none
from kernel.metrics import LEASE_TAKEOVERS
from processes.engine.lease import lease_seconds
from processes.engine.wakeups import WAKE_POLL_S, WANTS_WORKER, wakeups_due, workers_busy_mark
from processes.lanes import DELIVER_TASK, LANE_CLUSTERS, lane_send
from processes.models import ProcessRun, RunState

logger = logging.getLogger("turbobase.processes.engine")


def redelivery_interval() -> float:
    """How often a lane's watch looks: a third of the lease, at most every 5 s."""
    configured = redelivery_seconds()
    return configured if configured else max(0.5, min(5.0, lease_seconds() / 3))


PEEK = 20  # waiting tasks looked at for the oldest delivery (a lane's queue holds drains too)


def _oldest_waiting_tasks(cluster: str) -> list:
    """The signed payloads of the oldest tasks not yet taken from the lane's queue, oldest first."""
    broker = get_broker(list_key=cluster)
    if isinstance(broker, ORM):  # taken tasks carry a lock in the future (the task retry)
        rows = OrmQ.objects.filter(key=broker.list_key, lock__lte=timezone.now()).order_by("id")[
            :PEEK
        ]
        return [row.payload for row in rows]
    if isinstance(broker, Redis):
        return list(broker.connection.lrange(broker.list_key, 0, PEEK - 1))
    raise NotImplementedError(type(broker).__name__)


def _delivered_run(payload: bytes | str) -> uuid.UUID | None:
    task = SignedPackage.loads(payload)
    if task.get("func") != DELIVER_TASK or not task.get("args"):
        return None
    return uuid_or_none(task["args"][0])


def lane_waiting_since(mode: str) -> datetime | None:
    """When the run of the oldest delivery still waiting in the lane's queue was sent: runs sent
    before it are not waiting any more. Now when the queue is empty; None when unknown."""
    try:
        payloads = _oldest_waiting_tasks(LANE_CLUSTERS[mode])
        if not payloads:
            return timezone.now()
        run_id = next((run for run in map(_delivered_run, payloads) if run is not None), None)
    except Exception:  # noqa: BLE001 — another broker, a payload we cannot read: the lease alone decides
        return None
    if run_id is None:
        return None
    return ProcessRun.objects.filter(pk=run_id).values_list("enqueued_at", flat=True).first()


def runs_lost(*, mode: str, now: datetime | None = None) -> list[tuple]:
    """(run id, delivery, enqueued_at) of the lane's runs whose delivery was lost."""
    return [lost[:3] for lost in _runs_lost(mode=mode, now=now)]


def _runs_lost(*, mode: str, now: datetime | None = None) -> list[tuple]:
    """``runs_lost`` and each one's state: a queued one was never claimed, a running one's
    delivery let its lease run out (its worker died: the next delivery takes it over)."""
    now = now or timezone.now()
    sent_long_ago = Q(enqueued_at__isnull=True) | Q(
        enqueued_at__lt=now - timedelta(seconds=lease_seconds())
    )
    queued = Q(state=RunState.QUEUED) & sent_long_ago
    waiting_since = lane_waiting_since(mode)
    if waiting_since is not None:
        queued &= Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=waiting_since)
    dropped = (
        Q(state=RunState.RUNNING, pending_reason__in=WANTS_WORKER)
        & (Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        # not sent again since its lease ran out (or that too was a lease ago)
        & (sent_long_ago | Q(enqueued_at__lt=F("lease_until")))
    )
    return list(
        ProcessRun.objects.filter(Q(mode=mode) & (queued | dropped))
        .order_by("created_at")
        .values_list("run_id", "delivery", "enqueued_at", "state")
    )


def run_resend(run_id, *, delivery: int, enqueued_at: datetime | None, mode: str) -> bool:
    """Send delivery ``delivery`` again, unless another host's watch just did (or it moved on)."""
    sent_as_read = (
        Q(enqueued_at__isnull=True) if enqueued_at is None else Q(enqueued_at=enqueued_at)
    )
    with transaction.atomic():
        taken = ProcessRun.objects.filter(sent_as_read, pk=run_id, delivery=delivery).update(
            enqueued_at=timezone.now()
        )
        if taken:
            lane_send(run_id=run_id, delivery=delivery, mode=mode)
    return bool(taken)


def redelivery_tick(*, mode: str) -> int:
    """One look at the lane: send every lost delivery again. Returns how many were sent."""
    sent = 0
    for run_id, delivery, enqueued_at, state in _runs_lost(mode=mode):
        resent = run_resend(run_id, delivery=delivery, enqueued_at=enqueued_at, mode=mode)
        if resent and state == RunState.RUNNING:  # its worker died holding the lease
            LEASE_TAKEOVERS.labels(lane=mode).inc()
        sent += resent
    if sent:
        logger.warning("lane %s: sent %d lost deliveries again", mode, sent)
    return sent


def redelivery_look(modes: Iterable[str]) -> None:
    """One look at each lane in ``modes``; a failure is logged and the next look tries again."""
    close_old_connections()
    for mode in modes:
        try:
            redelivery_tick(mode=mode)
        except Exception:  # the database blinked: look again next time
            logger.exception("lane %s: redelivery look failed", mode)


def wakeups_look(modes: Iterable[str]) -> None:
    """Deliver the parked runs of each lane in ``modes`` whose due time has come (the ``wake_at``
    index, ``engine.wakeups``); a failure is logged and the next look tries again."""
    close_old_connections()
    for mode in modes:
        try:
            wakeups_due(mode=mode)
            workers_busy_mark(mode=mode)
        except Exception:  # the database blinked: look again next time
            logger.exception("lane %s: wake-up look failed", mode)


def redelivery_watch(*, mode: str, alive: Callable[[], bool]) -> None:
    """While ``alive()`` (the lane's cluster runs): the wake-ups every ``WAKE_POLL_S`` and the
    lost deliveries every ``redelivery_interval()`` seconds."""
    interval = redelivery_interval()
    look_at = time.monotonic()
    try:
        while alive():
            wakeups_look([mode])
            if time.monotonic() >= look_at:
                redelivery_look([mode])
                look_at = time.monotonic() + interval
            deadline = time.monotonic() + WAKE_POLL_S
            while alive() and time.monotonic() < deadline:
                time.sleep(0.1)
    finally:
        connection.close()
