"""The rules every boundary write shares: its payload's shape, the guardrail rule, the record
addressed (locked, as its writer may see it), the ``before_save`` hooks, the outbound write state
of a connected type, and what the boundary answers (``WriteResult``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from guardrails.models import Decision, RuleAction
from guardrails.rules import rule_decide
from kernel.ids import uuid_or_none
from records.catalog import RecordType
from records.errors import (
    AtomicWriteRequired,
    GuardrailDenied,
    PayloadInvalid,
    ProtectedFieldRefused,
    RecordNotFound,
    RequiredFieldMissing,
)
from records.fields import fields_check
from records.hooks import HookContext, HookSlot, hooks_run
from records.models import (
    Record,
    RecordWriteState,
    WriteOperation,
    WriteStatus,
)
from records.outcomes import WriteOutcome
from records.policies import records_writable
from records.signals import outbound_write_queued
from records.trail import Actor


@dataclass(frozen=True)
class WriteResult:
    """What the boundary did, and the notice a held delete carries."""

    record: Record
    outcome: WriteOutcome
    code: str | None = None
    message: str = ""
    write_state_id: int | None = None  # the outbound write it queued (a connected type's)

    @property
    def is_new(self) -> bool:
        return self.outcome == WriteOutcome.CREATED


def payload_check(rt: RecordType, parent: Any, lines: Any, *, is_create: bool) -> None:
    if not isinstance(parent, dict):
        raise PayloadInvalid("parent must be an object of field values", field="parent")
    if lines is not None and not (
        isinstance(lines, list) and all(isinstance(x, dict) for x in lines)
    ):
        raise PayloadInvalid("lines must be a list of objects", field="lines")
    for name in parent:
        if rt.is_protected(name):
            raise ProtectedFieldRefused(
                f"{name} is a protected column and cannot be written", field=f"parent.{name}"
            )
    fields_check(rt, parent, lines)
    if not is_create:
        if not parent:
            raise PayloadInvalid("parent must name at least one field to change", field="parent")
        return
    for name in rt.required:
        if parent.get(name) in (None, ""):
            raise RequiredFieldMissing(f"{name} is required", field=f"parent.{name}")
    if rt.is_connected and rt.is_transaction and not lines and not parent.get("created_from_id"):
        raise AtomicWriteRequired(
            f"a {rt.name} create sends header and lines in one write: return a non-empty lines array, "
            "or set parent.created_from_id to transform another document",
            field="lines",
        )


def rule_check(rt: RecordType, action: RuleAction) -> str:
    decision = rule_decide(record_type=rt.name, action=action, is_connected=rt.is_connected)
    if decision == Decision.DENY:
        raise GuardrailDenied(
            f"the guardrail rule {rt.name}.{action} denies this write", field=None
        )
    return decision


def record_snapshot(record: Record) -> dict[str, Any]:
    return {
        "pgRowId": str(record.pg_row_id),
        "externalId": record.external_id,
        "parent": dict(record.fields),
        "lines": list(record.lines),
        "syncVersion": record.sync_version,
    }


def write_state_row(
    record: Record, operation: str, payload: dict, *, status: str = WriteStatus.PENDING
) -> RecordWriteState:
    """The outbound write of ``record`` to its source, not yet saved."""
    return RecordWriteState(
        record_id=record.pk,
        record_type=record.record_type,
        source_system=record.source_system,
        operation=operation,
        status=status,
        payload=payload,
    )


def outbound_wake(record_type: str) -> None:
    """Wake the type's outbound drain once the write has committed (it sends every write due)."""
    transaction.on_commit(
        lambda: outbound_write_queued.send(sender=Record, record_type=record_type)
    )


def outbound_queue(
    record: Record, operation: str, payload: dict, *, status: str = WriteStatus.PENDING
) -> RecordWriteState:
    state = write_state_row(record, operation, payload, status=status)
    state.save(force_insert=True)
    if status == WriteStatus.PENDING:
        outbound_wake(record.record_type)
    return state


def before_save_on_update(actor: Actor, rt: RecordType, record: Record, parent: dict) -> dict:
    """An update's ``before_save`` hooks (they may refuse), shown the record as it will be;
    answers that snapshot, whose ``parent`` the update stores."""
    merged = record_snapshot(record)
    merged["parent"].update(parent)
    hooks_run(
        HookContext(
            HookSlot.BEFORE_SAVE,
            rt.name,
            WriteOperation.UPDATE,
            merged,
            dict(parent),
            actor=actor.user.get_username(),
            process_run_id=actor.process_run_id or None,
        )
    )
    return merged


def before_save_on_create(actor: Actor, rt: RecordType, record: Record, parent: dict) -> None:
    """A create's ``before_save`` hooks (they may refuse): one call for a single and a batch create."""
    hooks_run(
        HookContext(
            HookSlot.BEFORE_SAVE,
            rt.name,
            WriteOperation.CREATE,
            record_snapshot(record),
            dict(parent),
            actor=actor.user.get_username(),
            process_run_id=actor.process_run_id or None,
        )
    )


def record_address(
    actor: Actor,
    rt: RecordType,
    *,
    pg_row_id: Any,
    external_id: Any,
    source_system: str | None = None,
    lock: bool = True,
) -> Record:
    """Lock and return the one writable record the address names, else 404 (never a create).
    ``lock=False``: read it unlocked (a grouped update, outside any transaction, whose write
    checks the version it read instead)."""
    if (pg_row_id in (None, "")) == (external_id in (None, "")):
        raise PayloadInvalid(
            "name the record by exactly one of pgRowId or externalId", field="pgRowId"
        )
    rows = records_writable(user=actor.user, record_type=rt)
    if lock:
        rows = rows.select_for_update()
    if source_system:
        rows = rows.filter(source_system=source_system)
    if pg_row_id not in (None, ""):
        parsed = uuid_or_none(str(pg_row_id))
        if parsed is None:  # not a UUID: no record can have it
            raise RecordNotFound(f"no {rt.name} record has pgRowId {pg_row_id!r}", field="pgRowId")
        field, found = "pgRowId", rows.filter(pg_row_id=parsed).first()
    else:
        field, found = (
            "externalId",
            rows.filter(external_id=str(external_id)).first(),
        )
    if found is None:
        value = pg_row_id if field == "pgRowId" else external_id
        raise RecordNotFound(f"no {rt.name} record you can see has {field} {value!r}", field=field)
    return found
