"""The write boundary: the only door through which a record is created, changed or deleted.

Every call runs in one ``transaction.atomic()`` with its trail row: payload checks, write
entitlement and write RLS, guardrail rules, ``before_save``/``before_delete`` hooks, the write,
the outbound write state for a connected type, the record's watchers (``records.watches``: a
process triggered by the record entering a state) and the trail. A refusal changes nothing and leaves
a ``refused`` trail row (written after the failed write's savepoint is rolled back; inside a
``WriteUnit`` — a process step — after the caller's whole transaction is, with no savepoint paid
on success). A create's record and its ``allowed`` trail row are one INSERT statement on
PostgreSQL. Outbound sending happens after commit (``outbound_write_queued``), never inside the
request.

A process step's create may be grouped with its neighbours' (``records.step_writes``): checked
and built by the same rules as here, written with them in one statement. Hand-built SQL writes
live in ``records.sql_writes`` only.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import IntegrityError
from django.db.models import F
from django.utils import timezone

from guardrails.models import RuleAction
from kernel.rows import row_like
from records.catalog import RecordType, record_type_get
from records.deletes import DeleteWindowWait, after_delete_schedule, record_delete
from records.door import door_opened
from records.errors import (
    NotSettleConflict,
    PayloadInvalid,
    SyncVersionMoved,
)
from records.hooks import HookSlot, hooks_for
from records.models import (
    Record,
    RecordWriteState,
    SyncState,
    TrailAction,
    TrailOutcome,
    WriteOperation,
    WriteStatus,
    WriteTrail,
)
from records.outcomes import WriteOutcome
from records.policies import default_group, write_entitlement_check
from records.sql_writes import pair_insert
from records.trail import Actor, trail_row, trail_write
from records.units import WriteUnit, refusing, write_unit
from records.watches import record_written
from records.write_rules import (
    WriteResult,
    before_save_on_create,
    before_save_on_update,
    outbound_queue,
    payload_check,
    record_address,
    record_snapshot,
    rule_check,
)

__all__ = [
    "DeleteWindowWait",
    "WriteResult",
    "WriteUnit",
    "after_delete_schedule",
    "before_save_on_update",
    "record_create",
    "record_delete",
    "record_settle",
    "record_snapshot",
    "record_update",
    "write_unit",
]


@door_opened
def record_create(
    *,
    actor: Actor,
    record_type: str,
    parent: Any,
    lines: Any = None,
    idempotency_key: str | None = None,
) -> WriteResult:
    """Create one record. A used idempotency key returns the first record and writes nothing."""
    rt = record_type_get(record_type)
    with refusing(actor, TrailAction.CREATE, rt.name):
        create_check(actor, rt, parent, lines)
        # A used key answers with its record before any hook runs; without hooks the idempotent
        # INSERT below finds that out itself, so the common create costs no look-up first.
        hooked = bool(hooks_for(HookSlot.BEFORE_SAVE, rt.name))
        if idempotency_key and hooked:
            existing = Record.objects.filter(idempotency_key=idempotency_key).first()
            if existing is not None:
                return _duplicate(actor, rt, existing)
        record = record_new(actor, rt, parent, lines, idempotency_key)
        if hooked:
            before_save_on_create(actor, rt, record, parent)
        trail = trail_allowed(actor, rt, record)
        if not pair_insert(record, trail, keyed=bool(idempotency_key)):
            # A writer with the same key committed first (or was first in this transaction):
            # ON CONFLICT waited for it, and this create answers with that writer's record.
            existing = Record.objects.filter(idempotency_key=idempotency_key).first()
            if existing is None:
                raise IntegrityError(f"record with idempotency key {idempotency_key!r} vanished")
            return _duplicate(actor, rt, existing)
        state = None
        if rt.is_connected:
            payload = {"parent": parent, "lines": lines or []}
            state = outbound_queue(record, WriteOperation.CREATE, payload).pk
        record_written(actor, record, before=None)
        return WriteResult(record, WriteOutcome.CREATED, write_state_id=state)


def create_check(actor: Actor, rt: RecordType, parent: Any, lines: Any) -> None:
    """What a create must pass before anything is written: the payload, the writer's
    entitlement (write RLS), the guardrail rules."""
    payload_check(rt, parent, lines, is_create=True)
    write_entitlement_check(user=actor.user, record_type=rt)
    rule_check(rt, RuleAction.CREATE)


def record_new(
    actor: Actor,
    rt: RecordType,
    parent: dict,
    lines: list | None,
    idempotency_key: str | None,
    pg_row_id: uuid.UUID | None = None,
) -> Record:
    record = record_like(
        record_shared(actor, rt), parent=parent, lines=lines or [], key=idempotency_key or None
    )
    if pg_row_id is not None:
        record.pg_row_id = pg_row_id
    return record


def record_shared(actor: Actor, rt: RecordType) -> Record:
    """What every record ``actor`` creates of type ``rt`` shares, built once (``Model.__init__``
    was a tenth of a step's time) and remembered on the user object — which lives for one request
    or one run delivery, as ``default_group`` is — under what it was built from."""
    memo = actor.user.__dict__.setdefault("_tb_record_shared", {})
    key = (rt.name, rt.source, rt.is_connected)
    shared = memo.get(key)
    if shared is None:
        shared = memo[key] = Record(
            record_type=rt.name,
            owner=actor.user,
            group=default_group(actor.user),
            source_system=rt.source or "",
            sync_state=SyncState.PENDING if rt.is_connected else SyncState.LOCAL,
        )
    return shared


def trail_allowed(actor: Actor, rt: RecordType, record: Record) -> WriteTrail:
    return trail_row(
        actor=actor,
        action=TrailAction.CREATE,
        record_type=rt.name,
        outcome=TrailOutcome.ALLOWED,
        pg_row_id=record.pg_row_id,
    )


def _duplicate(actor: Actor, rt: RecordType, existing: Record) -> WriteResult:
    if existing.record_type != rt.name:
        raise PayloadInvalid(
            f"idempotency key already used for a {existing.record_type} record",
            field="idempotencyKey",
        )
    trail_write(
        actor=actor,
        action=TrailAction.CREATE,
        record_type=rt.name,
        outcome=TrailOutcome.DUPLICATE,
        pg_row_id=existing.pg_row_id,
        message="idempotency key already used; nothing written",
    )
    return WriteResult(existing, WriteOutcome.DUPLICATE)


@door_opened
def record_update(
    *,
    actor: Actor,
    record_type: str,
    parent: Any,
    pg_row_id: Any = None,
    external_id: Any = None,
    expected_sync_version: int | None = None,
) -> WriteResult:
    """Change the named fields of one record; only those fields are written."""
    rt = record_type_get(record_type)
    with refusing(actor, TrailAction.UPDATE, rt.name, pg_row_id):
        payload_check(rt, parent, None, is_create=False)
        write_entitlement_check(user=actor.user, record_type=rt)
        rule_check(rt, RuleAction.UPDATE)
        record = record_address(actor, rt, pg_row_id=pg_row_id, external_id=external_id)
        if expected_sync_version is not None and int(expected_sync_version) != record.sync_version:
            raise SyncVersionMoved(
                f"expected sync version {expected_sync_version}, the record is at {record.sync_version}",
                field="expectedSyncVersion",
            )
        merged = before_save_on_update(actor, rt, record, parent)
        before, record.fields = record.fields, merged["parent"]
        now = timezone.now()
        Record.objects.filter(pk=record.pk).update(
            fields=record.fields, sync_version=F("sync_version") + 1, updated_at=now
        )
        # The row is locked (``record_address``) and nothing else moves on an update: what it holds now
        # is known, so it is not read back.
        record.sync_version, record.updated_at = record.sync_version + 1, now
        state = None
        if rt.is_connected:
            state = outbound_queue(record, WriteOperation.UPDATE, {"parent": parent}).pk
        record_written(actor, record, before=before)
        trail_write(
            actor=actor,
            action=TrailAction.UPDATE,
            record_type=rt.name,
            outcome=TrailOutcome.ALLOWED,
            pg_row_id=record.pg_row_id,
        )
        return WriteResult(record, WriteOutcome.UPDATED, write_state_id=state)


@door_opened
def record_settle(*, actor: Actor, record_type: str, pg_row_id: Any) -> WriteResult:
    """Link a row whose upstream create landed but whose link back failed (write_settle_conflict).

    The id is read from the row's write state, never from the caller. An inbound copy of the same
    upstream record that arrived meanwhile is discarded.
    """
    rt = record_type_get(record_type)
    with refusing(actor, TrailAction.SETTLE, rt.name, pg_row_id):
        write_entitlement_check(user=actor.user, record_type=rt)
        record = record_address(actor, rt, pg_row_id=pg_row_id, external_id=None)
        state = (
            RecordWriteState.objects.select_for_update()
            .filter(record=record, status=WriteStatus.SETTLE_CONFLICT)
            .order_by("-id")
            .first()
        )
        if record.sync_state != SyncState.SETTLE_CONFLICT or state is None:
            raise NotSettleConflict(
                f"{rt.name} {record.pg_row_id} is {record.sync_state}, not waiting to be settled",
                field="pgRowId",
            )
        Record.objects.filter(
            record_type=rt.name, source_system=record.source_system, external_id=state.external_id
        ).exclude(pk=record.pk).delete()
        now = timezone.now()
        Record.objects.filter(pk=record.pk).update(
            external_id=state.external_id,
            sync_state=SyncState.SYNCED,
            synced_at=now,
            updated_at=now,
        )
        state.status = WriteStatus.SETTLED
        state.save(update_fields=["status", "updated_at"])
        record.refresh_from_db()
        trail_write(
            actor=actor,
            action=TrailAction.SETTLE,
            record_type=rt.name,
            outcome=TrailOutcome.SETTLED,
            pg_row_id=record.pg_row_id,
        )
        return WriteResult(record, WriteOutcome.SETTLED)


def record_like(shared: Record, *, parent: Any, lines: Any, key: str | None) -> Record:
    """A new, unsaved record with ``shared``'s columns and related objects, and its own id."""
    return row_like(shared, pg_row_id=uuid.uuid4(), fields=parent, lines=lines, idempotency_key=key)
