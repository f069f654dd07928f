"""The rest of the door: what the sources' verdicts and an operator's decision do to a record.

These are the only other functions that change a record; they are called by the outbound worker
(``sources``) and by the held-delete approval (API and admin), never by apps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db import connection, models, transaction
from django.dispatch import Signal
from django.utils import timezone

from guardrails.models import HeldDelete, HeldStatus
from kernel.audit import audit_record
from kernel.errors import Conflict, NotFound
from records.codes import RecordError, RefusalCode
from records.door import door_opened
from records.models import (
    Record,
    RecordWriteState,
    SyncState,
    TrailAction,
    TrailOutcome,
    WriteOperation,
    WriteStatus,
)
from records.outcomes import VerdictKind
from records.signals import outbound_write_queued
from records.trail import Actor, trail_write

# Sent after commit with write_state_id=…, record_id=…, verdict=<the final VerdictKind>.
source_verdict = Signal()
# Sent after commit once for the verdicts folded in one transaction (a drain's run, or one),
# before their ``source_verdict``s, with verdicts=[Announced, …]: a receiver that reads per
# verdict (which runs wait on it) reads once for the run.
source_verdicts = Signal()
# Sent INSIDE the transaction that folds verdicts, once their rows are written, with
# folded=[Folded, …]: what a receiver writes (the ledger row of a step waiting on the write)
# commits or rolls back with the verdicts; a receiver that raises rolls them back.
verdicts_folded = Signal()


@dataclass(frozen=True)
class Announced:
    """One verdict as ``source_verdicts`` announces it."""

    write_state_id: int
    record_id: Any
    operation: str  # a WriteOperation
    verdict: VerdictKind


@dataclass(frozen=True)
class Folded:
    """One verdict as folded into its write, as ``verdicts_folded`` tells it."""

    write_state_id: int
    status: str  # the write's WriteStatus now
    external_id: str | None  # the record's id at the source, else the write's
    write_external_id: str | None  # the write's own (a settle conflict's: the record is not linked)
    code: str
    field: str
    message: str


def _folded_tell(states: Sequence[RecordWriteState], records: dict[Any, Record]) -> None:
    """Inside the verdicts' transaction: tell ``verdicts_folded`` what they did to each write."""
    folded = [
        Folded(
            write_state_id=s.pk,
            status=s.status,
            external_id=records[s.record_id].external_id or s.external_id,
            write_external_id=s.external_id,
            code=s.reason_code,
            field=s.field,
            message=s.message,
        )
        for s in states
    ]
    if folded:
        verdicts_folded.send(sender=RecordWriteState, folded=folded)


@dataclass(frozen=True)
class Verdict:
    """A source's answer to one write."""

    kind: VerdictKind  # a final kind: confirmed / refused / settle_conflict
    external_id: str | None = None
    code: str = ""
    field: str = ""
    message: str = ""


def _announce(states: Sequence[RecordWriteState], kinds: Sequence[VerdictKind]) -> None:
    """After commit: ``source_verdicts`` once for the verdicts, then ``source_verdict`` each."""
    run = [
        Announced(s.pk, s.record_id, s.operation, kind)
        for s, kind in zip(states, kinds, strict=True)
    ]

    def send() -> None:
        source_verdicts.send(sender=RecordWriteState, verdicts=run)
        for one in run:
            source_verdict.send(
                sender=RecordWriteState,
                write_state_id=one.write_state_id,
                record_id=one.record_id,
                verdict=one.verdict,
            )

    if run:
        transaction.on_commit(send)


@transaction.atomic
@door_opened
def verdict_apply(*, write_state_id: int, verdict: Verdict) -> RecordWriteState:
    """Apply a source's verdict to the write and its record, in one transaction, and announce it."""
    state = RecordWriteState.objects.select_for_update().get(pk=write_state_id)
    record = Record.objects.select_for_update().get(pk=state.record_id)
    _fold(state, record, verdict, timezone.now())
    state.save()
    record.save(update_fields=RECORD_FIELDS)
    _folded_tell([state], {record.pk: record})
    _announce([state], [verdict.kind])
    return state


RECORD_FIELDS = ["sync_state", "external_id", "synced_at", "updated_at"]
STATE_FIELDS = ["status", "external_id", "reason_code", "field", "message", "updated_at"]


@transaction.atomic
@door_opened
def verdicts_apply(verdicts: Sequence[tuple[int, Verdict]]) -> list[RecordWriteState]:
    """Apply the verdicts of a run of writes (a drain's batch) in one transaction: one locking
    read of their write states and one of their records, one UPDATE of each (``bulk_update``).

    A write no longer pending was decided meanwhile (a lease that ran out mid-send): the first
    verdict stands and it is skipped. The writes are of distinct records (the drain cuts its
    batch before a record's second write). Raises ``IntegrityError`` when a confirmed id is
    already another row's: the caller applies that batch one verdict at a time.
    """
    by_id = dict(verdicts)
    states = list(
        RecordWriteState.objects.select_for_update()
        .filter(pk__in=by_id, status=WriteStatus.PENDING)
        .order_by("id")
    )
    records = Record.objects.select_for_update().in_bulk([s.record_id for s in states])
    now = timezone.now()
    for state in states:
        _fold(state, records[state.record_id], by_id[state.pk], now)
        state.updated_at = now  # written by hand below: no auto_now
    for record in records.values():
        record.updated_at = now
    _rows_update(RecordWriteState, STATE_FIELDS, states)
    _rows_update(Record, RECORD_FIELDS, list(records.values()))
    _folded_tell(states, records)
    _announce(states, [by_id[state.pk].kind for state in states])
    return states


def _rows_update(model: type[models.Model], names: list[str], rows: Sequence[models.Model]) -> None:
    """UPDATE ``names`` of ``rows`` by primary key: one statement text, executed for every row
    (``executemany``: one pipeline on psycopg), values prepared as ``save()`` prepares them.
    ``bulk_update``'s CASE per column cost more in Python than the statements it saved."""
    if not rows:
        return
    quote = connection.ops.quote_name
    pk = model._meta.pk
    fields = [model._meta.get_field(name) for name in names]
    columns = [f for f in (*fields, pk) if isinstance(f, models.Field)]
    assert len(columns) == len(names) + 1  # concrete fields, and the key last
    assignments = ", ".join(f"{quote(str(f.column))} = %s" for f in columns[:-1])
    sql = (
        f"UPDATE {quote(model._meta.db_table)} SET {assignments}"
        f" WHERE {quote(str(columns[-1].column))} = %s"
    )
    params = [
        [f.get_db_prep_save(getattr(row, f.attname), connection) for f in columns] for row in rows
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)


def _fold(state: RecordWriteState, record: Record, verdict: Verdict, now: datetime) -> None:
    """What ``verdict`` does to the write and its record, in memory (the caller saves both)."""
    state.reason_code, state.field, state.message = (
        verdict.code,
        verdict.field or "",
        verdict.message,
    )
    if verdict.kind == VerdictKind.CONFIRMED:
        state.status = WriteStatus.CONFIRMED
        if verdict.external_id:
            state.external_id = verdict.external_id
        if state.operation == WriteOperation.DELETE:
            new_state = SyncState.DELETED
        else:
            if verdict.external_id and not record.external_id:
                record.external_id = verdict.external_id
            new_state, record.synced_at = SyncState.SYNCED, now
    elif verdict.kind == VerdictKind.SETTLE_CONFLICT:
        state.status, state.external_id = WriteStatus.SETTLE_CONFLICT, verdict.external_id
        state.reason_code = RefusalCode.WRITE_SETTLE_CONFLICT
        new_state = SyncState.SETTLE_CONFLICT
    elif verdict.kind == VerdictKind.REFUSED:
        state.status = WriteStatus.REFUSED
        if state.operation == WriteOperation.DELETE:
            # A refused delete brings the record back, with the reason on its write state.
            new_state = state.payload.get("prior_state") or SyncState.SYNCED
        else:
            new_state = SyncState.PARKED
    else:
        raise ValueError(f"unknown verdict {verdict.kind!r}")
    is_delete_outstanding = record.sync_state in (SyncState.DELETE_HELD, SyncState.DELETING)
    if state.operation != WriteOperation.DELETE and is_delete_outstanding:
        # A delete is held or on its way: an earlier write's verdict must not un-hide the record.
        # It becomes the state a rejected or refused delete brings the record back to.
        _delete_prior_state_set(record, new_state)
    else:
        record.sync_state = new_state


def _delete_prior_state_set(record: Record, prior_state: str) -> None:
    pending = (
        RecordWriteState.objects.select_for_update()
        .filter(
            record=record,
            operation=WriteOperation.DELETE,
            status__in=(WriteStatus.HELD, WriteStatus.PENDING),
        )
        .order_by("-id")
        .first()
    )
    if pending is not None:
        pending.payload = {**pending.payload, "prior_state": prior_state}
        pending.save(update_fields=["payload", "updated_at"])


@door_opened
def verdict_transient(*, write_state_id: int, message: str, next_attempt_at) -> RecordWriteState:
    """Count a failed attempt; the write stays at the head of its type's queue."""
    state = RecordWriteState.objects.get(pk=write_state_id)
    state.attempts += 1
    state.message, state.reason_code, state.next_attempt_at = (
        message,
        RefusalCode.TRANSIENT,
        next_attempt_at,
    )
    state.save(
        update_fields=["attempts", "message", "reason_code", "next_attempt_at", "updated_at"]
    )
    return state


class HeldDeleteNotPending(Conflict):
    """That held delete was already decided."""

    code = RefusalCode.HELD_DELETE_NOT_PENDING


class HeldDeleteNotFound(NotFound):
    """No held delete has that id."""

    error = RecordError.HELD_DELETE_NOT_FOUND


HELD_DELETE_APPROVED = "held_delete.approved"
HELD_DELETE_REJECTED = "held_delete.rejected"


def _held_state_decided(
    record: Record, state: RecordWriteState | None, *, approve: bool, by: User, note: str
) -> None:
    """Approved: the record is deleting and its held outbound delete is sent; rejected: the
    record comes back as it was and the outbound delete is cancelled."""
    if approve:
        from records.deletes import after_delete_schedule
        from records.write_rules import record_snapshot

        record.sync_state = SyncState.DELETING
        after_delete_schedule(Actor(user=by), record.record_type, record_snapshot(record))
        if state is not None:
            state.status = WriteStatus.PENDING
            state.save(update_fields=["status", "updated_at"])
            record_type = record.record_type
            transaction.on_commit(
                lambda: outbound_write_queued.send(sender=Record, record_type=record_type)
            )
        return
    record.sync_state = (state.payload.get("prior_state") if state else None) or SyncState.SYNCED
    if state is not None:
        state.status, state.message = WriteStatus.CANCELLED, note or "rejected by an operator"
        state.save(update_fields=["status", "message", "updated_at"])


@transaction.atomic
@door_opened
def held_delete_decide(*, held_id: int, approve: bool, by: User, note: str = "") -> HeldDelete:
    """An operator approves (the delete is sent) or rejects (the record comes back) a held delete."""
    held = HeldDelete.objects.select_for_update().filter(pk=held_id).first()
    if held is None:
        raise HeldDeleteNotFound(f"no held delete #{held_id}", id=held_id)
    if held.status != HeldStatus.PENDING:
        raise HeldDeleteNotPending(f"held delete #{held_id} is already {held.status}", field="id")
    state = (
        RecordWriteState.objects.select_for_update()
        .filter(record_id=held.pg_row_id, operation=WriteOperation.DELETE, status=WriteStatus.HELD)
        .order_by("-id")
        .first()
    )
    record = Record.objects.select_for_update().filter(pk=held.pg_row_id).first()
    if record is None:  # removed by other means meanwhile: nothing left to approve or bring back
        raise HeldDeleteNotPending(
            f"the record of held delete #{held_id} no longer exists", field="id"
        )
    _held_state_decided(record, state, approve=approve, by=by, note=note)
    record.save(update_fields=["sync_state", "updated_at"])
    held.status = HeldStatus.APPROVED if approve else HeldStatus.REJECTED
    held.decided_by, held.decided_at, held.note = by, timezone.now(), note
    held.save()
    trail_write(
        actor=Actor(user=by),
        action=TrailAction.DELETE,
        record_type=held.record_type,
        outcome=TrailOutcome.APPROVED if approve else TrailOutcome.REJECTED,
        pg_row_id=held.pg_row_id,
        message=note,
    )
    audit_record(
        actor=by,
        action=HELD_DELETE_APPROVED if approve else HELD_DELETE_REJECTED,
        target=f"held_delete:{held.pk}",
        before={"status": HeldStatus.PENDING.value},
        after={
            "status": held.status,
            "recordType": held.record_type,
            "pgRowId": str(held.pg_row_id),
        },
        reason=note,
    )
    return held
