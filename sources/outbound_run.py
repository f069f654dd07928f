"""One run of a drain: the next writes of one record type, sent in order and their answers folded.

A drain claims the head of its type's line and the writes behind it (``RUN_MAX``, one read with
their records) and cuts the run where a write must wait for the one before it to be folded:
another source, a write with its own retry time, a second write of one record (an update needs
the id its create's verdict brings), or a write that needs no send (an update of a record that
was never linked is answered here). The source's pacing grants the run its rate slots in one
ticket (``sources.pacing``); the adapter sends it (``SourceAdapter.send_batch``) and hands the
answers back in order, and ``sources.outbound_answers`` folds them. The base adapter hands back
each answer as it comes, so a kill re-sends at most the write in hand; the sandbox folds its
whole run in the transaction that answers it, so a kill re-sends the run and nothing twice.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone

from records.catalog import RecordTypeNotFound, record_type_get
from records.models import Record, RecordWriteState, WriteOperation, WriteStatus
from records.outcomes import VerdictKind
from sources.adapters import adapter_for_source
from sources.adapters.base import OutboundWrite, Outcome, confirmed, refused, transient
from sources.codes import SourceCode
from sources.conf import outbound_conf
from sources.errors import AdapterNotFound
from sources.outbound_answers import outbound_answers_apply
from sources.pacing import pace_recovered, pace_release, pace_slow_down, pace_take

RUN_MAX = 32  # writes a drain claims, sends and folds as one run (fewer within its budget)


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


def outbound_next(*, record_type: str, limit: int) -> list[RecordWriteState]:
    """The next ``limit`` pending writes of ``record_type`` in commit order, with their records."""
    return list(
        RecordWriteState.reads.filter(record_type=record_type, status=WriteStatus.PENDING)
        .select_related("record")
        .order_by("id")[:limit]
    )


@dataclass
class _Run:
    """A run being sent: its write states, the writes handed to the adapter, and how many of
    them have been answered."""

    states: list[RecordWriteState]
    writes: list[OutboundWrite]
    report: DrainReport
    answered: int = 0

    def fold(self, outcomes: list[Outcome]) -> None:
        """The adapter's ``answered``: fold the answers to the next writes of the run."""
        at = self.answered
        pairs = [
            (state, _answer_fixed(state, write, outcome))
            for state, write, outcome in zip(
                self.states[at:], self.writes[at:], outcomes, strict=False
            )
        ]
        self.answered += len(pairs)
        source = self.states[0].source_system
        slowed = [outcome for _, outcome in pairs if outcome.slow_down]
        for outcome in slowed:  # before the fold: a slowed-down write is due when the source is
            pace_slow_down(source=source, retry_after=outcome.retry_after, reason=outcome.message)
        if not slowed:
            pace_recovered(source=source)
        outbound_answers_apply(pairs)
        self.report.sent += [(state.pk, outcome.kind) for state, outcome in pairs]


def run_send(claimed: list[RecordWriteState], token: str, report: DrainReport) -> bool:
    """Send the run at the head of ``claimed`` once its source's pacing lets it, and fold the
    answers. False: the source will not take it for longer than a worker waits
    (``report.retry_at`` says until when)."""
    try:
        adapter = adapter_for_source(claimed[0].source_system)
    except AdapterNotFound as exc:  # a catalog mistake, not the source's answer: retry, say why
        return _answered_here(claimed[0], transient(exc.message), report)
    states, writes, answer = _cut(claimed)
    if answer is not None:  # the head needs no send (or cannot be sent): its answer is here
        return _answered_here(states[0], answer, report)
    conf = outbound_conf()
    source, holder = states[0].source_system, f"{token}:{states[0].pk}"
    ticket = pace_take(
        source=source,
        holder=holder,
        lease_seconds=conf.lane_lease_seconds,
        horizon_s=conf.inline_retry_seconds,
        want=len(writes),
    )
    if ticket.wait_until is not None:
        wait = (ticket.wait_until - timezone.now()).total_seconds()
        if wait > conf.inline_retry_seconds:
            report.retry_at = ticket.wait_until
            return False
        time.sleep(max(wait, 0.0))
        return True  # the caller looks at the head of line again
    run = _Run(states[: ticket.granted], writes[: ticket.granted], report)

    def at_slot(index: int) -> None:  # right before the request: preparing does not eat the gap
        time.sleep(max((ticket.slot(index) - timezone.now()).total_seconds(), 0.0))

    try:
        adapter.send_batch(run.writes, before_each=at_slot, answered=run.fold)
    finally:
        pace_release(holder=holder)
    return True


def _answered_here(state: RecordWriteState, answer: Outcome, report: DrainReport) -> bool:
    outbound_answers_apply([(state, answer)])
    report.sent.append((state.pk, answer.kind))
    return True


def _cut(
    claimed: list[RecordWriteState],
) -> tuple[list[RecordWriteState], list[OutboundWrite], Outcome | None]:
    """The run at the head of ``claimed`` and its writes; or the head alone and its answer when
    it needs none sent."""
    head, now = claimed[0], timezone.now()
    states: list[RecordWriteState] = []
    writes: list[OutboundWrite] = []
    records: set = set()
    for index, state in enumerate(claimed):
        if index and (
            state.source_system != head.source_system
            or state.record_id in records
            or (state.next_attempt_at is not None and state.next_attempt_at > now)
        ):
            break
        write = outbound_write(state)
        if isinstance(write, Outcome):
            if not index:
                return [state], [], write
            break
        states.append(state)
        writes.append(write)
        records.add(state.record_id)
    return states, writes, None


def outbound_write(state: RecordWriteState) -> OutboundWrite | Outcome:
    """What the adapter is handed for ``state`` (its record read with it), or the answer when
    it cannot or need not be sent."""
    record = state.record
    try:
        rt = record_type_get(state.record_type)
    except RecordTypeNotFound as exc:
        # A catalog mistake, not the source's answer: keep the write, retry, and say what is wrong.
        return transient(exc.message)
    external_id = record.external_id
    if state.operation != WriteOperation.CREATE and not external_id:
        unlinked = _unlinked(state, record)
        if isinstance(unlinked, Outcome):
            return unlinked
        external_id = unlinked
    return OutboundWrite(
        write_state_id=state.pk,
        operation=WriteOperation(state.operation),
        record_type=rt,
        source_name=state.source_system,
        pg_row_id=str(record.pg_row_id),
        external_id=external_id,
        parent=dict(state.payload.get("parent") or {}),
        lines=list(state.payload.get("lines") or []),
    )


def _answer_fixed(state: RecordWriteState, write: OutboundWrite, outcome: Outcome) -> Outcome:
    if (
        state.operation == WriteOperation.UPDATE
        and not state.record.external_id
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
