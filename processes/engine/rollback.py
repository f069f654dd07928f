"""Rollback: delete, newest first and through the delete boundary, what the run's ledger created.

Spared: records an update step changed, rows an earlier run had already migrated (reused), steps
declared ``keep`` (delete steps always are), and a record the source created whose link back
failed (SOURCE_APPLIED_UNLINKED). Each delete is charged to the rollback window, which waits
rather than refusing; a wait parks the run and the clock wakes it.

``rolled_back`` means every record the run created is gone here, so a run that keeps an unlinked
record ends ``failed`` instead, its reason naming what was kept and how to link it.
"""

from __future__ import annotations

from dataclasses import replace

from django.db import transaction

from kernel.errors import TurbobaseError
from processes.engine.ending import run_end, run_wait
from processes.engine.lease import Lease
from processes.models import Disposition, PendingReason, ProcessRun, RunState
from records.boundary import DeleteWindowWait, record_delete
from records.codes import RefusalCode
from records.errors import RecordNotFound
from records.models import RecordWriteState, WriteOperation, WriteStatus
from records.trail import Actor


def rollback_targets(run: ProcessRun):
    return (
        run.ledger.filter(
            created_record=True,
            rollback_keep=False,
            disposition__in=[Disposition.CONFIRMED, Disposition.FAILED],
        )
        .exclude(refusal_code=RefusalCode.SOURCE_APPLIED_UNLINKED)
        .order_by("-sequence")
    )


def unlinked_kept(run: ProcessRun) -> str | None:
    """What the rollback spares because the source created it and its link back failed, and how
    to link it (``records.boundary`` settle); None when the run kept no such record."""
    rows = list(
        run.ledger.filter(
            created_record=True, refusal_code=RefusalCode.SOURCE_APPLIED_UNLINKED
        ).order_by("sequence")
    )
    if not rows:
        return None
    kept = ", ".join(
        f"{row.record_type} {row.pg_row_id}" + (f" ({row.external_id})" if row.external_id else "")
        for row in rows
    )
    settle = ", ".join(dict.fromkeys(f"POST /v1/data/{row.record_type}/settle" for row in rows))
    it, its = ("it", "its") if len(rows) == 1 else ("them", "their")
    return (
        f"kept {kept}: the source created {it} and {its} link back failed "
        f"(SOURCE_APPLIED_UNLINKED), so no rollback deletes {it}; link {it} with {settle}"
    )


def deletes_in_flight(run: ProcessRun) -> int:
    """Rollback deletes accepted here and not yet confirmed by the source."""
    rows = run.ledger.filter(disposition=Disposition.ROLLED_BACK).values_list(
        "pg_row_id", flat=True
    )
    return RecordWriteState.reads.filter(
        record_id__in=list(rows), operation=WriteOperation.DELETE, status=WriteStatus.PENDING
    ).count()


def rolled_back_reason(run: ProcessRun) -> str | None:
    """The cause of the rollback, and how many of its deletes are still on their way."""
    base = run.rollback_cause
    sending = deletes_in_flight(run)
    if not sending:
        return base
    note = f"{sending} delete{'s' if sending != 1 else ''} still being sent to the source"
    return f"{base}; {note}" if base else note


def rollback_continue(run: ProcessRun, actor: Actor, *, lease: Lease | None = None) -> None:
    """Delete the next targets; end ``rolled_back`` when every one is accepted for sending."""
    for row in rollback_targets(run):
        try:
            with transaction.atomic():
                if lease is not None:
                    lease.hold()  # a delivery that lost the run deletes nothing
                record_delete(
                    actor=replace(actor, process_step=row.step_id),
                    record_type=row.record_type,
                    pg_row_id=row.pg_row_id,
                    rollback=True,
                )
                row.disposition = Disposition.ROLLED_BACK
                row.save(update_fields=["disposition", "updated_at"])
        except DeleteWindowWait as wait:
            run_wait(
                run,
                pending_reason=PendingReason.AWAITING_TIME,
                wake_at=wait.retry_at,
                waiting_step=row.step_id,
                lease=lease,
            )
            return
        except RecordNotFound:
            # Already gone (someone else removed it): nothing left to undo for this step.
            row.disposition = Disposition.ROLLED_BACK
            row.save(update_fields=["disposition", "updated_at"])
        except TurbobaseError as exc:
            code = getattr(exc, "code", exc.error)
            run_end(
                run,
                RunState.FAILED,
                lease=lease,
                reason=(
                    f"rollback could not remove {row.record_type} {row.pg_row_id} (step {row.step_id!r}): "
                    f"{code}: {exc.message}"
                ),
            )
            return
    run.refresh_from_db()
    reason, kept = rolled_back_reason(run), unlinked_kept(run)
    run_end(
        run,
        RunState.ROLLED_BACK if kept is None else RunState.FAILED,
        reason=reason if kept is None else "; ".join(part for part in (reason, kept) if part),
        outstanding=run.outstanding,
        lease=lease,
    )
