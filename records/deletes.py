"""The delete door: app-owned records are removed now; a connected record is hidden at once and
either held for an operator (the stock rule) or queued for its source, charged to the delete (or
rollback) window, in order, one delete at a time."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from guardrails.models import Decision, HeldDelete, RuleAction, WindowKind
from guardrails.windows import window_admit
from kernel.errors import TurbobaseError
from records.catalog import RecordType, record_type_get
from records.codes import RecordError, RefusalCode
from records.door import door_opened
from records.errors import (
    DeleteCapExceeded,
)
from records.hooks import HookContext, HookSlot, hooks_run
from records.models import (
    Record,
    SyncState,
    TrailAction,
    TrailOutcome,
    WriteOperation,
    WriteStatus,
)
from records.outcomes import WriteOutcome
from records.policies import write_entitlement_check
from records.trail import Actor, trail_write
from records.units import refusing
from records.write_rules import (
    WriteResult,
    outbound_queue,
    record_address,
    record_snapshot,
    rule_check,
)


class DeleteWindowWait(TurbobaseError):
    """The delete window is full; the delete may be sent once it frees (``retry_at``)."""

    error = RecordError.DELETE_WINDOW_FULL
    http_status = 429
    retryable = True

    def __init__(self, message: str, *, cap: str, retry_at) -> None:
        super().__init__(message, cap=cap, retryAt=retry_at.isoformat())
        self.cap = cap
        self.retry_at = retry_at


@door_opened
def record_delete(
    *,
    actor: Actor,
    record_type: str,
    pg_row_id: Any = None,
    external_id: Any = None,
    source_system: str | None = None,
    rollback: bool = False,
    on_cap: str = "refuse",
) -> WriteResult:
    """Delete one record.

    App-owned: removed now. Connected: hidden at once; held for an operator (the stock rule),
    or queued for the source. ``rollback=True`` charges the rollback window (it waits, never
    refuses, and is never held); otherwise the ordinary delete cap refuses (``on_cap='refuse'``)
    or asks the caller to wait (``on_cap='wait'``, raises ``DeleteWindowWait``).
    """
    rt = record_type_get(record_type)
    with refusing(actor, TrailAction.DELETE, rt.name, pg_row_id):
        write_entitlement_check(user=actor.user, record_type=rt)
        decision = rule_check(rt, RuleAction.DELETE)
        record = record_address(
            actor, rt, pg_row_id=pg_row_id, external_id=external_id, source_system=source_system
        )
        hooks_run(
            HookContext(
                HookSlot.BEFORE_DELETE,
                rt.name,
                WriteOperation.DELETE,
                record_snapshot(record),
                actor=actor.user.get_username(),
                process_run_id=actor.process_run_id or None,
            )
        )
        if not rt.is_connected:
            return _remove(actor, rt, record)
        _charge_delete(rt, record, rollback=rollback, on_cap=on_cap)
        prior = record.sync_state
        if decision == Decision.HOLD and not rollback:
            return _hold(actor, rt, record, prior)
        return _queue(actor, rt, record, prior, decision)


def _remove(actor: Actor, rt: RecordType, record: Record) -> WriteResult:
    """An app-owned record's delete: removed now; its after_delete hooks run after commit."""
    snapshot = record_snapshot(record)
    pk = record.pk
    record.delete()
    record.pk = pk  # Django clears the pk on delete; the answer and the trail still name the row
    trail_write(
        actor=actor,
        action=TrailAction.DELETE,
        record_type=rt.name,
        outcome=TrailOutcome.ALLOWED,
        pg_row_id=record.pk,
    )
    after_delete_schedule(actor, rt.name, snapshot)
    return WriteResult(record, WriteOutcome.DELETED)


def _queue(actor: Actor, rt: RecordType, record: Record, prior: str, decision: str) -> WriteResult:
    """A connected record's delete, admitted: hidden now, its outbound delete queued."""
    Record.objects.filter(pk=record.pk).update(
        sync_state=SyncState.DELETING, updated_at=timezone.now()
    )
    record.sync_state = SyncState.DELETING
    state = outbound_queue(record, WriteOperation.DELETE, {"prior_state": prior})
    trail_write(
        actor=actor,
        action=TrailAction.DELETE,
        record_type=rt.name,
        outcome=TrailOutcome.ALLOWED,
        pg_row_id=record.pg_row_id,
        code=RefusalCode.ALLOW_WITH_AUDIT if decision == Decision.ALLOW_WITH_AUDIT else "",
    )
    after_delete_schedule(actor, rt.name, record_snapshot(record))
    return WriteResult(record, WriteOutcome.QUEUED, write_state_id=state.pk)


def _charge_delete(rt: RecordType, record: Record, *, rollback: bool, on_cap: str) -> None:
    kind = WindowKind.ROLLBACK if rollback else WindowKind.DELETE
    admission = window_admit(kind=kind, source_system=record.source_system)
    if admission.admitted:
        return
    # A refused admission always names its cap and when the window frees (guardrails.windows).
    assert admission.cap is not None and admission.retry_at is not None
    message = (
        f"{admission.cap} ({admission.limit}) reached for {record.source_system}; "
        f"the window frees at {admission.retry_at.isoformat()}"
    )
    if rollback or on_cap == "wait":
        raise DeleteWindowWait(message, cap=admission.cap, retry_at=admission.retry_at)
    raise DeleteCapExceeded(
        f"delete refused, the record stays: {message}",
        field=admission.cap,
        retry_at=admission.retry_at,
    )


def _hold(actor: Actor, rt: RecordType, record: Record, prior: str) -> WriteResult:
    Record.objects.filter(pk=record.pk).update(
        sync_state=SyncState.DELETE_HELD, updated_at=timezone.now()
    )
    record.sync_state = SyncState.DELETE_HELD
    outbound_queue(record, WriteOperation.DELETE, {"prior_state": prior}, status=WriteStatus.HELD)
    HeldDelete.objects.create(
        record_type=rt.name,
        pg_row_id=record.pg_row_id,
        external_id=record.external_id,
        source_system=record.source_system,
        requested_by=actor.user if actor.user.pk else None,
        process_run_id=actor.process_run_id,
        process_step=actor.process_step,
    )
    message = "the delete is held for an operator's approval; the record is hidden until then"
    trail_write(
        actor=actor,
        action=TrailAction.DELETE,
        record_type=rt.name,
        outcome=TrailOutcome.HELD,
        pg_row_id=record.pg_row_id,
        code=RefusalCode.SOURCE_AWAITING_CONFIRMATION,
        message=message,
    )
    return WriteResult(
        record, WriteOutcome.HELD, code=RefusalCode.SOURCE_AWAITING_CONFIRMATION, message=message
    )


def after_delete_schedule(actor: Actor, record_type: str, snapshot: dict) -> None:
    """Run the after_delete hooks once the delete has committed (they cannot refuse it)."""
    context = HookContext(
        HookSlot.AFTER_DELETE,
        record_type,
        WriteOperation.DELETE,
        snapshot,
        actor=actor.user.get_username(),
        process_run_id=actor.process_run_id or None,
    )
    transaction.on_commit(lambda: _run_after_delete(context))


def _run_after_delete(context: HookContext) -> None:
    import logging

    try:
        hooks_run(context)
    except Exception:  # the record is already gone; an after_delete hook cannot refuse it
        logging.getLogger(__name__).exception(
            "after_delete hook failed for %s", context.record_type
        )
