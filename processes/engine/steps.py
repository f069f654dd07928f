"""One step: ``when`` → ``build`` (or the address) → the boundary → the ledger row, committed
together (a re-delivered slice finds the row and never writes twice; a create's idempotency key
is enforced by the boundary). The author's functions run before anything is written. A create or
an update by ``pgRowId`` that can be grouped joins the delivery's group (``engine.grouping``);
every other write first writes the group (``_settle``), so records and ledger land in step order.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from kernel.errors import NotFound, Refusal, TurbobaseError
from kernel.log_context import log_context_set
from processes.codes import ProcessCode
from processes.engine import grouped_steps
from processes.engine.ai_step import ai_step_execute
from processes.engine.ledger import Refused, write_outcome
from processes.engine.plan import PlannedStep
from processes.engine.runtime import ModuleRuntime, StepCodeFailed
from processes.engine.sleep_step import sleep_parked_until, sleep_step_resume, sleep_step_start
from processes.engine.statuses import StepKind, StepStatus
from processes.engine.step_inputs import (
    Unresolved,
    address_value,
    latest_write_state,
    payload_of,
    update_address,
)
from processes.engine.step_record import (
    StepResult,
    StepScope,
    record_step,
    step_refused,
    step_settle,
)
from processes.engine.task_step import task_of, task_step_resume, task_step_start
from processes.engine.wait_step import wait_of, wait_step_resume, wait_step_start
from processes.engine.waits import source_park_riding, step_waiting_on
from processes.models import Disposition, SkipReason
from processes.planning import plan_window_note
from records.boundary import (
    DeleteWindowWait,
    WriteResult,
    WriteUnit,
    record_create,
    record_delete,
    record_update,
    write_unit,
)
from records.codes import RefusalCode
from records.outcomes import WriteOutcome


def _groups(planned: PlannedStep) -> bool:
    """Whether the step is a create, update or delete that may join the delivery's group (the
    rest write the group first)."""
    return (
        planned.kind in (StepKind.CREATE, StepKind.UPDATE, StepKind.DELETE)
        and planned.definition.get("awaitSource") is not True
    )


def _fail(scope: StepScope, planned: PlannedStep, refusal: Refused, **fields: Any) -> StepResult:
    step_settle(scope)
    with transaction.atomic():
        row = record_step(scope, planned, disposition=Disposition.FAILED, refusal=refusal, **fields)
        return StepResult(StepStatus.FAILED, row)


def _declined(scope: StepScope, planned: PlannedStep) -> StepResult:
    """The step's when returned false or its build null: recorded as skipped, nothing written."""
    step_settle(scope)
    with transaction.atomic():
        row = record_step(
            scope, planned, disposition=Disposition.SKIPPED, skip_reason=SkipReason.DECLINED
        )
    return StepResult(StepStatus.DONE, row)


def _unresolved(scope: StepScope, planned: PlannedStep, what: str) -> StepResult:
    return _fail(
        scope,
        planned,
        Refused(
            RefusalCode.STEP_ADDRESS_UNRESOLVED,
            what,
            f"step {planned.step_id!r}: {what} did not resolve to a record; nothing was written",
        ),
    )


def step_execute(
    scope: StepScope, planned: PlannedStep, ctx: dict, runtime: ModuleRuntime
) -> StepResult:
    """Perform one step and record it. Never raises for the author's or the boundary's refusals."""
    log_context_set(step_id=planned.step_id)  # until the delivery ends (processes.observe)
    step = planned.definition
    if not _groups(planned):
        step_settle(scope)
    if planned.kind == StepKind.TASK:
        # Its task was made by an earlier delivery: only the decision is left to read.
        task = task_of(scope, planned)
        if task is not None:
            return task_step_resume(scope, planned, task)
    if planned.kind == StepKind.WAIT_FOR:
        # Its wait was made by an earlier delivery: only what came (or the timeout) is left to read.
        wait = wait_of(scope, planned)
        if wait is not None:
            return wait_step_resume(scope, planned, wait)
    if planned.kind == StepKind.SLEEP:
        # Parked on this step by an earlier delivery: only the clock is left to read.
        until = sleep_parked_until(scope, planned)
        if until is not None:
            return sleep_step_resume(scope, planned, until)
    try:
        if step.get("when") is not None:
            try:
                proceed = runtime.call(planned.path + ("when",), ctx)
            except StepCodeFailed as exc:
                return _fail(
                    scope,
                    planned,
                    Refused(ProcessCode.WHEN_FAILED, "when", f"when threw: {exc.message}"),
                )
            if proceed is not True:
                return _declined(scope, planned)
        if planned.kind == StepKind.AI:
            return ai_step_execute(scope, planned, ctx, runtime)
        if planned.kind == StepKind.TASK:
            return task_step_start(scope, planned, ctx, runtime)
        if planned.kind == StepKind.WAIT_FOR:
            return wait_step_start(scope, planned, ctx, runtime)
        if planned.kind == StepKind.SLEEP:
            return sleep_step_start(scope, planned, ctx, runtime)
        if planned.kind == StepKind.DELETE:
            return _delete(scope, planned, ctx, runtime)
        built = runtime.call(planned.path + ("build",), ctx)
        if built is None:
            return _declined(scope, planned)
        parent, lines = payload_of(built)
        address = update_address(runtime, planned, ctx) if planned.kind == StepKind.UPDATE else None
    except Unresolved as exc:
        return _unresolved(scope, planned, str(exc))
    except StepCodeFailed as exc:
        return _fail(scope, planned, Refused(exc.code, None, exc.message))
    return _write(scope, planned, parent, lines, address)


def _write_state(result: WriteResult) -> int | None:
    """The id of the outbound write the step's write queued (carried from its INSERT); a
    duplicate's — the key's earlier write — is read."""
    if result.write_state_id is not None:
        return result.write_state_id
    return latest_write_state(result.record.pk)


def _parks(scope: StepScope, planned: PlannedStep) -> dict | None:
    """The run columns that park the run on this awaiting step's verdict in the step's own
    statement (``waits.source_park_riding``); None: the walk's end parks it after."""
    waiting_on = step_waiting_on(scope.row_key, planned.step_id)
    return source_park_riding(scope.run, scope.lease, waiting_on)


def _write(
    scope: StepScope, planned: PlannedStep, parent: dict, lines: list | None, address: dict | None
) -> StepResult:
    record_type = planned.definition["recordType"]
    awaits = planned.definition.get("awaitSource") is True
    if not awaits:
        grouped = (
            grouped_steps.create_grouped(scope, planned, parent, lines)
            if address is None
            else grouped_steps.update_grouped(scope, planned, parent, address)
        )
        if grouped is not None:
            return grouped
    step_settle(scope)
    unit = WriteUnit()
    try:
        with write_unit() as unit:
            if address is None:
                result: WriteResult = record_create(
                    actor=scope.actor,
                    record_type=record_type,
                    parent=parent,
                    lines=lines,
                    idempotency_key=scope.idempotency_key,
                )
            else:
                result = record_update(
                    actor=scope.actor, record_type=record_type, parent=parent, **address
                )
            record = result.record
            reused = result.outcome == WriteOutcome.DUPLICATE and scope.row_key != ""
            write_state = _write_state(result) if awaits and record.source_system else None
            disposition = Disposition.SKIPPED if reused else Disposition.CONFIRMED
            awaiting = write_state is not None and not reused
            if scope.ahead is not None and not awaiting:  # an awaiting step parks the run
                scope.ahead(write_outcome(record.pk, record.external_id, disposition))
            row = record_step(
                scope,
                planned,
                parks=_parks(scope, planned) if awaiting else None,
                disposition=disposition,
                skip_reason=SkipReason.REUSED if reused else SkipReason.NONE,
                pg_row_id=record.pk,
                external_id=record.external_id,
                created_record=address is None and not reused,
                awaiting=awaiting,
                write_state_id=write_state,
                counts_write=result.outcome in (WriteOutcome.CREATED, WriteOutcome.UPDATED),
            )
            return StepResult(StepStatus.DONE, row)
    except (Refusal, NotFound, TurbobaseError) as exc:
        return step_refused(scope, planned, unit, exc)


def _delete(
    scope: StepScope, planned: PlannedStep, ctx: dict, runtime: ModuleRuntime
) -> StepResult:
    delete = planned.definition["delete"]
    key = "pgRowId" if delete.get("pgRowId") is not None else "externalId"
    value = address_value(runtime, planned, ctx, "delete", key)
    if key == "pgRowId" and not delete.get("sourceSystem"):
        grouped = grouped_steps.delete_grouped(scope, planned, value)
        if grouped is not None:
            return grouped
    step_settle(scope)
    unit = WriteUnit()
    try:
        with write_unit() as unit:
            result = record_delete(
                actor=scope.actor,
                record_type=planned.definition["recordType"],
                pg_row_id=value if key == "pgRowId" else None,
                external_id=value if key == "externalId" else None,
                source_system=delete.get("sourceSystem"),
                on_cap="wait",
            )
            notice = Refused(result.code, None, result.message) if result.code else None
            # A delete on its way to a connected system waits for the source's verdict, as an
            # awaitSource create does: a refusal (the record comes back) fails the step with the
            # source's code and sentence, and onRefused decides the run. A held delete does not
            # wait (nothing bounds how long a person takes); it is confirmed with its notice.
            sent = result.outcome == WriteOutcome.QUEUED and bool(result.record.source_system)
            write_state = _write_state(result) if sent else None
            row = record_step(
                scope,
                planned,
                parks=_parks(scope, planned) if write_state is not None else None,
                disposition=Disposition.CONFIRMED,
                refusal=notice,
                pg_row_id=result.record.pk,
                external_id=result.record.external_id,
                counts_write=True,
                awaiting=write_state is not None,
                write_state_id=write_state,
            )
            return StepResult(StepStatus.DONE, row)
    except DeleteWindowWait as wait:  # nothing was written: the step waits for the window
        plan_window_note(
            step_id=planned.step_id,
            record_type=planned.definition["recordType"],
            cap=wait.cap,
            retry_at=wait.retry_at,
            message=wait.message,
        )
        return StepResult(StepStatus.WAIT_WINDOW, cap=wait.cap, retry_at=wait.retry_at)
    except (Refusal, NotFound, TurbobaseError) as exc:
        return step_refused(scope, planned, unit, exc)
