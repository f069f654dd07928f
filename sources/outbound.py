"""The outbound worker: writes of one record type reach their source one at a time, in order.

A drain holds the type's lane (``sources.lanes``), takes the head-of-line pending write (lowest
``RecordWriteState.id`` — the order writes committed in) and the writes behind it as one run
(``sources.outbound_run``, up to ``RUN_MAX``), has the source's adapter send them in that order,
folds the source's verdicts through ``records.verdicts`` (``sources.outbound_answers``) and repeats
until nothing of that type is due. Other types have their own lanes and drain in parallel on
other workers.

- Confirmed / refused / settle conflict: ``verdicts_apply``, one transaction for a run's answers
  (the only way a verdict touches a record). A confirm whose link back fails here (another row
  already holds that id) becomes a settle conflict.
- Transient: ``verdict_transient`` counts the attempt and sets ``next_attempt_at`` with exponential
  backoff. The write stays at the head of its type, so later writes of that type wait behind it:
  order is the guarantee, and a source that numbers documents per type must see them in order.
  After ``sources.max_attempts`` the write is NOT parked — nothing was refused, and parking would
  let later writes overtake it — it keeps retrying at the cap interval, with ``attempts``, the
  source's last message and ``next_attempt_at`` on the write state for an operator to see.
- After letting go of the lane the drain looks again: a write that committed while it was
  finishing would otherwise wait for nobody (its wake-up saw the lane taken and stood down).

Delivery is at least once: a worker that dies mid-send leaves the write pending, and after the
lease runs out the next drain sends it again (with the same idempotency key). An adapter that
hands each answer back as it comes (the base class) is re-sent only the write in hand; the
sandbox, whose answers commit with their verdicts, is re-sent the run it had not committed. On PostgreSQL, ids
are handed out before commit, so "commit order" is the id order of committed writes: a write
whose transaction commits after a later-numbered one was already sent goes next.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from datetime import datetime

from django.db.models import Min
from django.utils import timezone

from records.models import RecordWriteState, WriteStatus
from sources.conf import outbound_conf
from sources.lanes import lane_acquire, lane_is_held, lane_release, lane_renew
from sources.outbound_answers import outbound_backoff, outbound_outcome_apply
from sources.outbound_run import RUN_MAX, DrainReport, outbound_next, run_send
from sources.pacing import pace_due
from sources.wakeups import outbound_enqueue, outbound_schedule_retry

__all__ = [  # the worker's other modules' names that callers know from here
    "DrainReport",
    "outbound_backoff",
    "outbound_outcome_apply",
]

logger = logging.getLogger(__name__)

RENEW_AFTER_PART = 10  # a lane lease is renewed before a send once a tenth of it has passed


def outbound_head(*, record_type: str) -> RecordWriteState | None:
    """The write of ``record_type`` that goes next: the lowest-numbered pending one."""
    return (
        RecordWriteState.reads.filter(record_type=record_type, status=WriteStatus.PENDING)
        .order_by("id")
        .first()
    )


def outbound_drain(*, record_type: str) -> DrainReport:
    """Send every due write of ``record_type``, in order, unless another drain already holds the lane."""
    conf = outbound_conf()
    token = f"{os.getpid()}:{uuid.uuid4().hex[:16]}"
    report = DrainReport(record_type)
    if not lane_acquire(record_type=record_type, token=token, seconds=conf.lane_lease_seconds):
        return report  # the holder sends ours too, and looks again after letting go
    report.acquired = True
    try:
        _drain_held(record_type, token, report)
    finally:
        lane_release(record_type=record_type, token=token)
    _look_again(record_type)
    return report


def _drain_held(record_type: str, token: str, report: DrainReport) -> None:
    conf = outbound_conf()
    started = held_at = time.monotonic()  # the lane's lease was taken (then renewed) at held_at
    while True:
        budget = conf.drain_max_writes - len(report.sent)
        claimed = outbound_next(record_type=record_type, limit=max(1, min(RUN_MAX, budget)))
        if not claimed:
            return
        head = claimed[0]
        if head.next_attempt_at is not None:
            wait = (head.next_attempt_at - timezone.now()).total_seconds()
            if wait > conf.inline_retry_seconds:
                report.retry_at = head.next_attempt_at
                return
            if wait > 0:
                time.sleep(wait)
        if budget <= 0 or time.monotonic() - started > conf.drain_max_seconds:
            report.yielded = True
            return
        # Before a send the lease is renewed, unless it was taken or renewed so lately that most
        # of it is left: until it runs out no other drain can take the lane.
        if time.monotonic() - held_at > conf.lane_lease_seconds / RENEW_AFTER_PART:
            if not lane_renew(
                record_type=record_type, token=token, seconds=conf.lane_lease_seconds
            ):
                logger.warning("lost the %s lane (lease ran out); stopping this drain", record_type)
                return
            held_at = time.monotonic()
        if not run_send(claimed, token, report):
            return  # the source is paced further off than we wait in a worker


def outbound_due_at(head: RecordWriteState) -> datetime | None:
    """When ``head`` may be sent: its own retry time or its source's pacing, whichever is later;
    None if it may go now."""
    # A rate slot a drain would wait for in the worker is not worth a schedule (which may run late).
    paced = pace_due(head.source_system, horizon_s=outbound_conf().inline_retry_seconds)
    later = [at for at in (head.next_attempt_at, paced) if at is not None]
    due = max(later) if later else None
    return due if due is not None and due > timezone.now() else None


def _look_again(record_type: str) -> None:
    """After releasing: queue the next drain if work is due, or schedule it for when it will be."""
    head = outbound_head(record_type=record_type)
    if head is None:
        return
    due = outbound_due_at(head)
    if due is None:
        outbound_enqueue(record_type=record_type)
    else:
        outbound_schedule_retry(record_type=record_type, at=due)


def outbound_sweep() -> list[str]:
    """Wake a drain for every type whose head of line is due and whose lane is free.

    Catches lost wake-ups and drains that died holding a lane (once its lease has run out).
    """
    heads = (
        RecordWriteState.reads.filter(status=WriteStatus.PENDING)
        .values("record_type")
        .annotate(head_id=Min("id"))
    )
    woken = []
    for row in heads:
        head = RecordWriteState.reads.only("next_attempt_at", "source_system").get(
            pk=row["head_id"]
        )
        if outbound_due_at(head) is not None:
            continue
        if lane_is_held(record_type=row["record_type"]):
            continue
        outbound_enqueue(record_type=row["record_type"])
        woken.append(row["record_type"])
    return sorted(woken)
