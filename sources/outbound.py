"""The outbound worker: writes of one record type reach their source one at a time, in order.

A drain holds the type's lane (``sources.lanes``), sends the head-of-line pending write (lowest
``RecordWriteState.id`` — the order writes committed in), applies the source's verdict through
``records.verdicts`` and repeats until nothing of that type is due. Other types have their own
lanes and drain in parallel on other workers.

- Confirmed / refused / settle conflict: ``verdict_apply`` (the only way a verdict touches a record).
  A confirm whose link back fails here (another row already holds that id) becomes a settle conflict.
- Transient: ``verdict_transient`` counts the attempt and sets ``next_attempt_at`` with exponential
  backoff. The write stays at the head of its type, so later writes of that type wait behind it:
  order is the guarantee, and a source that numbers documents per type must see them in order.
  After ``sources.max_attempts`` the write is NOT parked — nothing was refused, and parking would
  let later writes overtake it — it keeps retrying at the cap interval, with ``attempts``, the
  source's last message and ``next_attempt_at`` on the write state for an operator to see.
- After letting go of the lane the drain looks again: a write that committed while it was
  finishing would otherwise wait for nobody (its wake-up saw the lane taken and stood down).

Delivery is at least once: a worker that dies mid-send leaves the write pending, and after the
lease runs out the next drain sends it again (with the same idempotency key). On PostgreSQL, ids
are handed out before commit, so "commit order" is the id order of committed writes: a write
whose transaction commits after a later-numbered one was already sent goes next.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import IntegrityError
from django.db.models import Min
from django.utils import timezone

from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get
from records.catalog import RecordTypeNotFound, record_type_get
from records.models import Record, RecordWriteState, WriteOperation, WriteStatus
from records.outcomes import VerdictKind
from records.verdicts import Verdict, verdict_apply, verdict_transient
from sources.adapters import adapter_for_source
from sources.adapters.base import (
    OutboundWrite,
    Outcome,
    confirmed,
    refused,
    transient,
)
from sources.codes import SourceCode
from sources.conf import outbound_conf
from sources.errors import AdapterNotFound
from sources.lanes import lane_acquire, lane_is_held, lane_release, lane_renew
from sources.pacing import (
    pace_due,
    pace_recovered,
    pace_release,
    pace_slow_down,
    pace_take,
    paced_until,
)
from sources.wakeups import outbound_enqueue, outbound_schedule_retry

logger = logging.getLogger(__name__)


@dataclass
class DrainReport:
    """What one drain did (returned by the task, so it shows in django-q's task results)."""

    record_type: str
    acquired: bool = False
    sent: list[tuple[int, str]] = field(default_factory=list)  # (write state id, outcome kind)
    yielded: bool = False  # stopped on its budget; another drain was queued
    retry_at: datetime | None = None  # the head of line is backing off until then

    def as_dict(self) -> dict:
        return {
            "recordType": self.record_type,
            "acquired": self.acquired,
            "sent": self.sent,
            "yielded": self.yielded,
            "retryAt": self.retry_at.isoformat() if self.retry_at else None,
        }


def outbound_head(*, record_type: str) -> RecordWriteState | None:
    """The write of ``record_type`` that goes next: the lowest-numbered pending one."""
    return (
        RecordWriteState.reads.filter(record_type=record_type, status=WriteStatus.PENDING)
        .order_by("id")
        .first()
    )


def outbound_backoff(*, attempts: int) -> float:
    """Seconds to wait after the ``attempts``-th failed attempt."""
    conf = outbound_conf()
    if attempts >= setting_get(SettingKey.SOURCES_MAX_ATTEMPTS):
        return conf.retry_cap_seconds
    return min(conf.retry_cap_seconds, conf.retry_base_seconds * 2 ** max(attempts - 1, 0))


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
    started = time.monotonic()
    while True:
        head = outbound_head(record_type=record_type)
        if head is None:
            return
        if head.next_attempt_at is not None:
            wait = (head.next_attempt_at - timezone.now()).total_seconds()
            if wait > conf.inline_retry_seconds:
                report.retry_at = head.next_attempt_at
                return
            if wait > 0:
                time.sleep(wait)
        if (
            len(report.sent) >= conf.drain_max_writes
            or time.monotonic() - started > conf.drain_max_seconds
        ):
            report.yielded = True
            return
        if not lane_renew(record_type=record_type, token=token, seconds=conf.lane_lease_seconds):
            logger.warning("lost the %s lane (lease ran out); stopping this drain", record_type)
            return
        outcome = _send_paced(head, token, report)
        if outcome is None:
            return  # the source is paced further off than we wait in a worker
        if outcome is _AGAIN:
            continue
        outbound_outcome_apply(state=head, outcome=outcome)
        report.sent.append((head.pk, outcome.kind))


_AGAIN = transient("paced: look at the head of line again")


def _send_paced(head: RecordWriteState, token: str, report: DrainReport) -> Outcome | None:
    """Send ``head`` once its source's pacing lets it (``sources.pacing``).

    None: the source will not take it for longer than a worker waits (``report.retry_at`` says
    until when); ``_AGAIN``: it waited a little, and the caller starts over from the head of line.
    """
    conf = outbound_conf()
    source = head.source_system
    holder = f"{token}:{head.pk}"
    ticket = pace_take(
        source=source,
        holder=holder,
        lease_seconds=conf.lane_lease_seconds,
        horizon_s=conf.inline_retry_seconds,
    )
    if ticket.wait_until is not None:
        wait = (ticket.wait_until - timezone.now()).total_seconds()
        if wait > conf.inline_retry_seconds:
            report.retry_at = ticket.wait_until
            return None
        time.sleep(max(wait, 0.0))
        return _AGAIN
    start_at = ticket.start_at or timezone.now()

    def at_slot() -> None:  # right before the request: reading the record does not eat the gap
        time.sleep(max((start_at - timezone.now()).total_seconds(), 0.0))

    try:
        outcome = outbound_send(state=head, before_send=at_slot)
    finally:
        pace_release(holder=holder)
    if outcome.slow_down:
        pace_slow_down(source=source, retry_after=outcome.retry_after, reason=outcome.message)
    else:
        pace_recovered(source=source)
    return outcome


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


def outbound_send(
    *, state: RecordWriteState, before_send: Callable[[], None] | None = None
) -> Outcome:
    """Hand one write to its source's adapter and bring back the answer (never raises for the
    source). ``before_send`` runs just before the adapter is called (the pacing's rate slot)."""
    record = Record.reads.filter(pk=state.record_id).first()
    if record is None:  # removed meanwhile, and its write states with it: nothing to apply to
        return transient("the record no longer exists")
    try:
        rt = record_type_get(state.record_type)
        adapter = adapter_for_source(state.source_system)
    except (RecordTypeNotFound, AdapterNotFound) as exc:
        # A catalog mistake, not the source's answer: keep the write, retry, and say what is wrong.
        return transient(exc.message)
    external_id = record.external_id
    if state.operation != WriteOperation.CREATE and not external_id:
        unlinked = _unlinked(state, record)
        if isinstance(unlinked, Outcome):
            return unlinked
        external_id = unlinked
    write = OutboundWrite(
        write_state_id=state.pk,
        operation=WriteOperation(state.operation),
        record_type=rt,
        source_name=state.source_system,
        pg_row_id=str(record.pg_row_id),
        external_id=external_id,
        parent=dict(state.payload.get("parent") or {}),
        lines=list(state.payload.get("lines") or []),
    )
    if before_send is not None:
        before_send()
    outcome = adapter.send(write)
    if (
        state.operation == WriteOperation.UPDATE
        and not record.external_id
        and outcome.kind == VerdictKind.CONFIRMED
    ):
        # Applied upstream to a record whose own link back is still unsettled: it stays unsettled.
        return Outcome(
            VerdictKind.SETTLE_CONFLICT,
            external_id=write.external_id,
            message=f"{state.source_system} applied the {state.operation} to {write.external_id}; "
            "the row is still not linked to it: settle it",
        )
    return outcome


def _unlinked(state: RecordWriteState, record: Record) -> Outcome | str:
    """An update or delete of a record with no upstream id: an outcome, or the id to address it by."""
    create = (
        RecordWriteState.reads.filter(record_id=record.pk, operation=WriteOperation.CREATE)
        .order_by("-id")
        .first()
    )
    create_status = create.status if create else None
    if create is not None and create_status == WriteStatus.SETTLE_CONFLICT and create.external_id:
        return create.external_id  # the source has it under that id; only the link back is missing
    never_taken = create_status in (WriteStatus.REFUSED, WriteStatus.CANCELLED)
    if state.operation == WriteOperation.DELETE and never_taken:
        return confirmed(None)  # the source never took it: nothing to delete there
    return refused(
        SourceCode.SOURCE_NOT_LINKED,
        "externalId",
        f"{record.record_type} {record.pg_row_id} has no id in {state.source_system} "
        f"(its create is {create_status or 'missing'}), so the {state.operation} was not sent",
    )


def outbound_outcome_apply(*, state: RecordWriteState, outcome: Outcome) -> None:
    """Record the source's answer through ``records.verdicts`` (the only code that moves a record)."""
    if not RecordWriteState.reads.filter(pk=state.pk, status=WriteStatus.PENDING).exists():
        return  # decided meanwhile (a lease that ran out mid-send): the first verdict stands
    if outcome.kind == VerdictKind.TRANSIENT:
        attempts = state.attempts + 1
        delay = outbound_backoff(attempts=attempts)
        # Slowed down: due exactly when its source's backoff ends (sources.pacing), not before.
        next_attempt_at = (
            paced_until(state.source_system) if outcome.slow_down else None
        ) or timezone.now() + timedelta(seconds=delay)
        message = outcome.message
        if attempts >= setting_get(SettingKey.SOURCES_MAX_ATTEMPTS):
            message = (
                f"{message} — still failing after {attempts} attempts; retrying every {delay:g}s"
            )
        verdict_transient(
            write_state_id=state.pk,
            message=message,
            next_attempt_at=next_attempt_at,
        )
        return
    verdict = Verdict(
        outcome.kind,
        external_id=outcome.external_id,
        code=outcome.code,
        field=outcome.field,
        message=outcome.message,
    )
    try:
        verdict_apply(write_state_id=state.pk, verdict=verdict)
    except IntegrityError:
        if outcome.kind != VerdictKind.CONFIRMED:
            raise
        # Another row already holds that id (an inbound copy arrived first): keep the id, let settle link it.
        verdict_apply(
            write_state_id=state.pk,
            verdict=Verdict(
                VerdictKind.SETTLE_CONFLICT,
                external_id=outcome.external_id,
                message=f"{state.source_system} created {outcome.external_id}, but linking it back failed: "
                "another row already holds that id",
            ),
        )


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
