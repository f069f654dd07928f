"""A run with a long ledger, written straight into ``process_run_step`` (the ledger is not behind
the records door): what the run page must stay small and quick for."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from processes.models import Disposition, PendingReason, ProcessRun, ProcessRunStep, RunState

# Every 50th step failed and every 7th was skipped, so the timeline has more than one colour.
_FAILED_EVERY, _SKIPPED_EVERY = 50, 7


def run_with_ledger(
    process_id: str,
    steps: int,
    *,
    state: str = RunState.COMMITTED,
    pending_reason: str = PendingReason.NONE,
    module_version: int = 1,
    slice_rows: int = 0,
    user=None,
) -> ProcessRun:
    """A run of ``process_id`` whose ledger holds ``steps`` rows, 20 ms apart, each step started
    10 ms before its row was written (``slice_rows`` > 0: a migration's slices of that many rows)."""
    started = timezone.now() - timedelta(milliseconds=20 * steps + 1000)
    run = ProcessRun.objects.create(
        process_id=process_id,
        state=state,
        pending_reason=pending_reason,
        module_version=module_version,
        invoked_by=user,
        started_at=started,
        finished_at=None
        if state in (RunState.QUEUED, RunState.RUNNING)
        else started + timedelta(milliseconds=20 * steps),
        slices=(steps // slice_rows + 1) if slice_rows else 0,
        writes=steps,
    )
    rows = []
    for n in range(1, steps + 1):
        disposition = (
            Disposition.FAILED
            if n % _FAILED_EVERY == 0
            else Disposition.SKIPPED
            if n % _SKIPPED_EVERY == 0
            else Disposition.CONFIRMED
        )
        rows.append(
            ProcessRunStep(
                run=run,
                sequence=n,
                step_id=f"step-{n}",
                record_type="note",
                disposition=disposition,
                row_key=str(n) if slice_rows else "",
                slice=(n - 1) // slice_rows + 1 if slice_rows else 1,
                refusal_code="REQUIRED_FIELD_MISSING"
                if disposition == Disposition.FAILED
                else None,
                refusal_message="title is required" if disposition == Disposition.FAILED else None,
            )
        )
    # created_at is auto_now_add: spread the rows over the run's time as a real run writes them.
    made = ProcessRunStep.objects.bulk_create(rows, batch_size=1000)
    for row in made:
        row.created_at = row.updated_at = started + timedelta(milliseconds=20 * row.sequence)
        row.started_at = row.created_at - timedelta(milliseconds=10)
    ProcessRunStep.objects.bulk_update(
        made, ["started_at", "created_at", "updated_at"], batch_size=500
    )
    return run
