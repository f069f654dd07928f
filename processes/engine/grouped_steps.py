"""A step's write joining the delivery's group (``engine.grouping``): the create, update or
delete checked and built by the records room now (``records.step_writes``), its ledger row built,
the step answered with the outcome it will have. None from each when the write cannot be
grouped: the step then writes the group and runs in a transaction of its own (``steps``)."""

from __future__ import annotations

import uuid
from typing import Any

from kernel.errors import NotFound, Refusal, TurbobaseError
from kernel.ids import uuid_or_none
from processes.engine.ledger import ledger_row, write_outcome
from processes.engine.plan import PlannedStep
from processes.engine.statuses import StepStatus
from processes.engine.step_record import StepResult, StepScope, step_placed, step_refused
from processes.models import Disposition
from records.step_folds import record_update_folded
from records.step_writes import record_create_ready, record_delete_ready, record_update_ready
from records.units import WriteUnit


def create_grouped(
    scope: StepScope, planned: PlannedStep, parent: dict, lines: list | None
) -> StepResult | None:
    """A create that joins the delivery's ride group (``engine.grouping``): checked and built now,
    written with its neighbours in one statement. None when it cannot ride (no group, the type,
    a key found taken before): the step runs in a transaction as any other."""
    rides, run = scope.rides, scope.run
    record_type = planned.definition["recordType"]
    if rides is None or not rides.open_to(record_type, scope.idempotency_key):
        return None
    # The record's id is chosen here, so the next step's first function can start in the
    # sandbox now, while this step's checks and rows are made.
    pg_row_id = scope.pg_row_id or uuid.uuid4()
    if scope.ahead is not None:
        scope.ahead(write_outcome(pg_row_id, None, Disposition.CONFIRMED))
    unit = WriteUnit()
    try:
        ride = record_create_ready(
            actor=scope.actor,
            record_type=record_type,
            parent=parent,
            lines=lines,
            idempotency_key=scope.idempotency_key,
            pg_row_id=pg_row_id,
            unit=unit,
        )
    except (Refusal, NotFound, TurbobaseError) as exc:
        return step_refused(scope, planned, unit, exc)
    if ride is None:
        return None
    ride.row = row = ledger_row(
        run,
        planned,
        disposition=Disposition.CONFIRMED,
        pg_row_id=pg_row_id,
        created_record=True,
        counts_write=True,
        **step_placed(scope),
    )
    rides.join(ride, planned.step_id, scope.idempotency_key)
    return StepResult(StepStatus.DONE, row)


def update_grouped(
    scope: StepScope, planned: PlannedStep, parent: dict, address: dict
) -> StepResult | None:
    """An update by ``pgRowId`` that joins the delivery's group: checked (its record read as its
    writer may see it) and its hooks run now, written with its neighbours only if the record is
    still at the version read. None when it cannot be grouped (no group, an address by
    ``externalId``, the type, a record that moved before): the step runs in a transaction."""
    group, record_type = scope.rides, planned.definition["recordType"]
    target = uuid_or_none(str(address.get("pg_row_id")))
    if group is None or target is None or not group.open_to(record_type, scope.idempotency_key):
        return None
    if group.holds(target):  # created in the group: folded into it; changed: read it after
        folded = _update_folded(scope, planned, parent, address, target)
        if folded is not None:
            return folded
        group.flush()
    unit = WriteUnit()
    try:
        ready = record_update_ready(
            actor=scope.actor,
            record_type=record_type,
            parent=parent,
            pg_row_id=target,
            expected_sync_version=address.get("expected_sync_version"),
            unit=unit,
        )
    except (Refusal, NotFound, TurbobaseError) as exc:
        return step_refused(scope, planned, unit, exc)
    if ready is None:
        return None
    record = ready.record
    if scope.ahead is not None:
        scope.ahead(write_outcome(record.pk, record.external_id, Disposition.CONFIRMED))
    return _joined(scope, planned, group, ready)


def _update_folded(
    scope: StepScope, planned: PlannedStep, parent: dict, address: dict, target: uuid.UUID
) -> StepResult | None:
    """An update of a record the group creates, joined without a read (``records.step_folds``);
    None when it cannot be folded (the group is written, and the update made as before)."""
    group = scope.rides
    base = group.pending(target) if group is not None else None
    if base is None:
        return None
    unit = WriteUnit()
    try:
        ready = record_update_folded(
            actor=scope.actor,
            record_type=planned.definition["recordType"],
            parent=parent,
            base=base,
            expected_sync_version=address.get("expected_sync_version"),
            unit=unit,
        )
    except (Refusal, NotFound, TurbobaseError) as exc:
        return step_refused(scope, planned, unit, exc)
    if ready is None:
        return None
    if scope.ahead is not None:
        scope.ahead(write_outcome(target, None, Disposition.CONFIRMED))
    return _joined(scope, planned, group, ready)


def delete_grouped(scope: StepScope, planned: PlannedStep, address: Any) -> StepResult | None:
    """A delete by ``pgRowId`` that joins the group: checked and its ``before_delete`` hooks run
    now, removed (a connected record: hidden, its outbound delete queued and its window charged)
    with its neighbours only if the record is still at the version read; its ``after_delete``
    hooks run once the group committed. A connected record's step waits on the source's verdict,
    its ledger row naming the outbound delete the statement writes. None when it cannot be
    grouped (a held delete, a full delete window: the step runs alone)."""
    group, record_type = scope.rides, planned.definition["recordType"]
    target = uuid_or_none(str(address))
    if group is None or target is None or not group.open_to(record_type, scope.idempotency_key):
        return None
    if group.holds(target):  # created or changed in the group: removed after it is written
        group.flush()
    unit = WriteUnit()
    try:
        ready = record_delete_ready(
            actor=scope.actor, record_type=record_type, pg_row_id=target, unit=unit
        )
    except (Refusal, NotFound, TurbobaseError) as exc:
        return step_refused(scope, planned, unit, exc)
    if ready is None:
        return None
    if ready.state is not None:  # its ledger row takes the outbound delete's id, and waits
        ready.state_ref = "write_state_id"
    elif scope.ahead is not None:  # (a delete that waits parks the run: nothing to start)
        scope.ahead(write_outcome(ready.record.pk, ready.record.external_id, Disposition.CONFIRMED))
    return _joined(scope, planned, group, ready, awaiting=ready.state is not None)


def _joined(
    scope: StepScope, planned: PlannedStep, group: Any, ready: Any, *, awaiting: bool = False
) -> StepResult:
    """A grouped update's or delete's confirmed ledger row, built now, and the step joined to the
    delivery's group (both are written with the group's statement)."""
    record = ready.record
    ready.row = row = ledger_row(
        scope.run,
        planned,
        disposition=Disposition.CONFIRMED,
        pg_row_id=record.pk,
        external_id=record.external_id,
        counts_write=True,
        awaiting=awaiting,
        **step_placed(scope),
    )
    group.join(ready, planned.step_id, scope.idempotency_key)
    return StepResult(StepStatus.DONE, row)
