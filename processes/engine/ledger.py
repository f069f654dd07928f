"""Ledger rows: what each step did, written in the same transaction as the step's write."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connections, router, transaction
from django.db.models import Count, Max, Q

from kernel.rows import row_like
from processes.engine.ending import run_let_go
from processes.engine.lease import Lease
from processes.engine.plan import PlannedStep
from processes.models import Disposition, ProcessRun, ProcessRunStep, SkipReason
from processes.observe import step_observed


@dataclass(frozen=True)
class Refused:
    code: str
    field: str | None
    message: str

    @classmethod
    def of(cls, exc: Any) -> Refused:
        return cls(
            str(getattr(exc, "code", "REFUSED")),
            getattr(exc, "field", None),
            getattr(exc, "message", str(exc)),
        )


def ledger_position(run: ProcessRun) -> None:
    """At a claim, the counts a delivery keeps in memory: the top sequence (``sequence_next``),
    read from the ``(run, sequence)`` index — one row, whatever the ledger's size — and the run's
    ``writes``, the truth about what earlier deliveries wrote, whatever a dead one left."""
    if writes_kept(run):
        top = run.ledger.order_by("-sequence").values_list("sequence", flat=True).first()
    else:  # one read of the whole ledger for both
        counted = run.ledger.aggregate(
            writes=Count("id", filter=Q(counts_write=True)), top=Max("sequence")
        )
        run.writes, top = counted["writes"], counted["top"]
    run.__dict__["_sequence_top"] = top or 0


def writes_kept(run: ProcessRun) -> bool:
    """Whether the run row's ``writes``, as the claim read it, is the ledger's count of writes.
    On PostgreSQL every committed ledger row that counts a write commits with the run's
    ``writes`` set in the same statement or transaction (``ledger_write``, a group's lease proof,
    a migration batch's), save one: a group cut by a cancel (``records.step_writes.group_commit``)
    writes its first row only, with the whole group's count — and a cancel request stays on the
    run until an ending clears it, writing the delivery's count (or, with no delivery's lease,
    the ledger's: ``engine.ending.run_end``). SQLite counts the ledger."""
    return connections[router.db_for_read(ProcessRun)].vendor == "postgresql" and not (
        run.cancel_requested
    )


def ledger_position_empty(run: ProcessRun) -> None:
    """``ledger_position`` of a run no delivery has claimed before: no row, nothing written."""
    run.writes = 0
    run.__dict__["_sequence_top"] = 0


def ledger_seen_empty(run: ProcessRun) -> bool:
    """Whether this delivery's claim found the run's ledger empty (and nothing written since)."""
    return run.__dict__.get("_sequence_top") == 0


def sequence_next(run: ProcessRun) -> int:
    """The next ledger position. One delivery holds the run, so the top is read once per delivery
    and kept on the delivery's instance of the run (in its ``__dict__``, as ``cached_property`` does)."""
    memo = run.__dict__
    top = memo.get("_sequence_top")
    if top is None:
        top = run.ledger.aggregate(top=Max("sequence"))["top"] or 0
    memo["_sequence_top"] = top + 1
    return top + 1


def sequence_release(run: ProcessRun, count: int = 1) -> None:
    """Give back the last ``count`` positions ``sequence_next`` handed out: their rows were not
    written."""
    run.__dict__["_sequence_top"] -= count


def ledger_write(
    run: ProcessRun,
    planned: PlannedStep,
    *,
    lease: Lease | None = None,
    parks: dict[str, Any] | None = None,
    **fields: Any,
) -> ProcessRunStep:
    """Record one step (inside the step's transaction): ``ledger_row(run, planned, **fields)``
    written. With the delivery's ``lease``, the same transaction proves the lease is still
    ours — else ``LeaseLost`` rolls the whole step back — and brings the run's ``writes`` up to
    date (on PostgreSQL in the row's own INSERT statement); ``parks``: run columns that park the
    run in that proof too (``waits.source_park_riding``; the lease's only)."""
    row = ledger_row(run, planned, **fields)
    # The run row's ``writes`` moves with every counted row (ledger_position); this is the copy.
    writes = run.writes + 1 if row.counts_write else run.writes
    if lease is not None:
        if parks:
            lease.let_go()  # as any park: the heartbeat stops renewing before it is written
        lease.hold_writing(row, **{**(parks or {}), "writes": writes})
        if parks:
            run_let_go(run, lease, {**parks, "writes": writes})
    else:  # no delivery's lease (a runner built without one): the run's count commits with it
        with transaction.atomic(savepoint=False):
            row.save(force_insert=True)
            if writes != run.writes:
                ProcessRun.objects.filter(pk=run.pk).update(writes=writes)
    run.writes = writes
    return row


def ledger_row(
    run: ProcessRun,
    planned: PlannedStep,
    *,
    disposition: str,
    pg_row_id: Any = None,
    external_id: str | None = None,
    created_record: bool = False,
    refusal: Refused | None = None,
    awaiting: bool = False,
    write_state_id: int | None = None,
    skip_reason: str = "",
    row_key: str = "",
    slice_number: int = 1,
    visit: int = 1,
    counts_write: bool = False,
    answer: Any = None,
    started_at: datetime | None = None,
) -> ProcessRunStep:
    """The ledger row of one step at the run's next position, not yet written (``ledger_write``
    writes it; a step whose write carries it in its own statement writes it there).
    ``started_at``: when the step began (the timeline draws its bar from there)."""
    step_observed(
        run,
        step_id=planned.step_id,
        kind=planned.kind,
        disposition=disposition,
        started_at=started_at,
    )
    return row_like(
        _blank(),
        run=run,
        sequence=sequence_next(run),
        step_id=planned.step_id,
        record_type=planned.definition.get("recordType", ""),
        action=planned.kind,
        pg_row_id=pg_row_id,
        external_id=external_id,
        disposition=disposition,
        row_key=row_key,
        slice=slice_number,
        visit=visit,
        created_record=created_record,
        rollback_keep=planned.is_keep,
        awaiting_verdict=awaiting,
        write_state_id=write_state_id,
        skip_reason=skip_reason,
        counts_write=counts_write,
        answer=answer,
        refusal_code=refusal.code if refusal else None,
        refusal_field=refusal.field if refusal else None,
        refusal_message=refusal.message if refusal else None,
        started_at=started_at,
    )


@functools.cache
def _blank() -> ProcessRunStep:
    """A ledger row with every column at its default: each new row is a copy (``row_like``)."""
    return ProcessRunStep()


def ledger_skip_rest(
    run: ProcessRun,
    rest: list[PlannedStep],
    *,
    row_key: str = "",
    slice_number: int = 1,
    visit: int = 1,
    lease: Lease | None = None,
) -> None:
    """Record steps the run will not reach as skipped (an earlier step failed, or the delete cap)."""
    done = set(
        run.ledger.filter(row_key=row_key, visit=visit, superseded=0).values_list(
            "step_id", flat=True
        )
    )
    for planned in rest:
        if planned.step_id not in done:
            ledger_write(
                run,
                planned,
                disposition=Disposition.SKIPPED,
                skip_reason=SkipReason.NOT_REACHED,
                row_key=row_key,
                slice_number=slice_number,
                visit=visit,
                lease=lease,
            )


def write_outcome(pg_row_id: Any, external_id: str | None, disposition: str) -> dict[str, Any]:
    """What ``ctx.steps[id]`` holds for a recorded create or update (``step_outcome``), from
    the values its ledger row is written with."""
    return {
        "pgRowId": str(pg_row_id) if pg_row_id else None,
        "externalId": external_id,
        "disposition": disposition,
    }


def step_outcome(row: ProcessRunStep) -> dict[str, Any]:
    """What ``ctx.steps[id]`` holds for a recorded step."""
    outcome = write_outcome(row.pg_row_id, row.external_id, row.disposition)
    if row.action == "ai":
        outcome["answer"] = row.answer
    elif row.action == "task":
        outcome["output"] = row.answer  # what the person completed it with (none if not completed)
    elif row.action == "waitFor":
        outcome["event"] = (row.answer or {}).get("event")  # the event, or None: timed out
    elif row.action == "sleep":
        outcome["wakeAt"] = (row.answer or {}).get("wakeAt")  # when it was due to wake
    return outcome
