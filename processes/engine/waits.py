"""awaitSource: take the outbound worker's verdict for a step's write, without holding a worker.

A waiting run records why (``pending_reason``) and until when (``wait_deadline``) and gives its
worker back. The verdict's transaction folds it into the waiting ledger row and, once committed,
re-queues the run (``verdict_wakeups``); the sweeper re-queues waits whose time is up and any run
whose wake-up was lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get
from processes.engine.ending import run_wait_riding
from processes.engine.lease import Lease
from processes.engine.ledger import Refused
from processes.engine.statuses import VerdictWait
from processes.models import Disposition, PendingReason, ProcessRun, ProcessRunStep
from processes.planning import is_planning
from records.codes import RefusalCode
from records.models import Record, RecordWriteState, WriteStatus
from sources.pacing import pace_due


@dataclass(frozen=True)
class VerdictOutcome:
    status: VerdictWait


@dataclass(frozen=True)
class LedgerVerdict:
    """What a write's verdict makes of the ledger row waiting on it (no longer awaiting)."""

    status: VerdictWait  # CONFIRMED or FAILED
    external_id: str | None
    refusal: Refused | None = None


def ledger_verdict(
    *,
    status: str,
    external_id: str | None,
    write_external_id: str | None,
    code: str,
    field: str,
    message: str,
) -> LedgerVerdict:
    """The waiting ledger row's verdict from its write's (``status``: a decided WriteStatus;
    ``external_id``: the record's id at the source, else the write's)."""
    if status in (WriteStatus.CONFIRMED, WriteStatus.SETTLED):
        return LedgerVerdict(VerdictWait.CONFIRMED, external_id)
    if status == WriteStatus.SETTLE_CONFLICT:
        refusal = Refused(
            RefusalCode.SOURCE_APPLIED_UNLINKED,
            field or None,
            message or "the source created the record but linking it back failed",
        )
        return LedgerVerdict(VerdictWait.FAILED, write_external_id, refusal)
    refusal = Refused(
        code or RefusalCode.SOURCE_REFUSED, field or None, message or "the source refused the write"
    )
    return LedgerVerdict(VerdictWait.FAILED, None, refusal)


def step_waiting_on(row_key: str, step_id: str) -> str:
    """What a run waiting at a step (a verdict, a delete window) names as its ``waiting_step``:
    ``row_key/step`` in a migration's row, else the step."""
    return f"{row_key}/{step_id}" if row_key else step_id


def wait_deadline(run: ProcessRun, waiting_on: str, now: datetime, budget_ms: int) -> datetime:
    """When the run stops waiting at ``waiting_on`` (``step_waiting_on``): the deadline it parked
    with before at that same step — a redelivery does not buy a new budget — else ``budget_ms``
    from now."""
    if run.waiting_step == waiting_on and run.wait_deadline:
        return run.wait_deadline
    return now + timedelta(milliseconds=budget_ms)


def source_deadline(run: ProcessRun, waiting_on: str, now: datetime) -> datetime:
    """``wait_deadline`` for a source's verdict (``processes.await_source_budget_ms``)."""
    budget_ms = setting_get(SettingKey.PROCESSES_AWAIT_SOURCE_BUDGET_MS)
    return wait_deadline(run, waiting_on, now, budget_ms)


def source_park_riding(
    run: ProcessRun, lease: Lease | None, waiting_on: str
) -> dict[str, Any] | None:
    """The run columns that park it on the verdict of the write a step is about to record, for the
    lease proof of the step's own statement: the write state, the ledger row and the park commit
    together, so the verdict's wake-up (after a drain that can only see them committed) always
    finds the run parked, and nothing need look again. None where the step's statement cannot
    park it: no lease (no delivery), a plan (it goes on), or the wait budget already spent."""
    if lease is None or is_planning():
        return None
    now = timezone.now()
    deadline = source_deadline(run, waiting_on, now)
    if now >= deadline:
        return None
    return run_wait_riding(
        run,
        lease,
        pending_reason=PendingReason.AWAITING_SOURCE,
        deadline=deadline,
        wake_at=deadline,  # the budget's end: the lane's watch delivers it then (wake_at index)
        waiting_step=waiting_on,
    )


def verdict_take(row: ProcessRunStep) -> VerdictOutcome:
    """Fold the write's verdict, if there is one, into the waiting ledger row. The verdicts'
    transaction folds it already (``verdict_wakeups.on_verdicts_folded``): this takes a write
    decided another way (a held delete an operator rejected)."""
    state = None
    if row.write_state_id is not None:
        state = RecordWriteState.reads.filter(pk=row.write_state_id).first()
    if state is None or state.status in (WriteStatus.PENDING, WriteStatus.HELD):
        return VerdictOutcome(VerdictWait.PENDING)
    record = Record.reads.filter(pk=state.record_id).values("external_id").first()
    taken = ledger_verdict(
        status=state.status,
        external_id=(record["external_id"] if record else None) or state.external_id,
        write_external_id=state.external_id,
        code=state.reason_code,
        field=state.field,
        message=state.message,
    )
    with transaction.atomic():
        row.awaiting_verdict = False
        if taken.refusal is None:
            row.external_id = taken.external_id
            row.save(update_fields=["awaiting_verdict", "external_id", "updated_at"])
            return VerdictOutcome(taken.status)
        if taken.external_id is not None:
            row.external_id = taken.external_id
        row.disposition = Disposition.FAILED
        row.refusal_code, row.refusal_field, row.refusal_message = (
            taken.refusal.code,
            taken.refusal.field,
            taken.refusal.message,
        )
        row.save()
        return VerdictOutcome(taken.status)


def verdict_pending(row: ProcessRunStep) -> bool:
    """Whether the write the row waits on has no verdict yet."""
    if row.write_state_id is None:
        return False
    return RecordWriteState.reads.filter(
        pk=row.write_state_id, status__in=[WriteStatus.PENDING, WriteStatus.HELD]
    ).exists()


def verdict_in(run_pk: Any) -> bool:
    """Whether the verdict an ``awaitingSource`` run waits on is in: folded into its ledger row
    (no row of the run awaits one any more), or its write decided another way. One read."""
    undecided = RecordWriteState.reads.filter(
        pk=OuterRef("write_state_id"), status__in=[WriteStatus.PENDING, WriteStatus.HELD]
    )
    return not (
        ProcessRunStep.objects.filter(run_id=run_pk, awaiting_verdict=True)
        .filter(Exists(undecided))
        .exists()
    )


def source_wait_detail(run_pk: Any) -> dict[str, str | None] | None:
    """What an ``awaitingSource`` run waits on: ``{"source", "pacedUntil"}``, worked out when read.

    ``pacedUntil`` is when its write may next be sent — the source backing off (429/503
    Retry-After, a timeout) or its rate, or the write's own retry — and null while it may go now.
    """
    # The run's last write is the one it parked on (its ledger row no longer awaits once the
    # verdict is folded, until a worker takes the run).
    write_state_id = (
        ProcessRunStep.objects.filter(run_id=run_pk)
        .exclude(write_state_id=None)
        .order_by("-sequence")
        .values_list("write_state_id", flat=True)
        .first()
    )
    if write_state_id is None:
        return None
    state = (
        RecordWriteState.reads.filter(pk=write_state_id)
        .values("source_system", "next_attempt_at", "status")
        .first()
    )
    if state is None:
        return None
    now = timezone.now()
    later = [
        at
        for at in (state["next_attempt_at"], pace_due(state["source_system"]))
        if at is not None and at > now and state["status"] == WriteStatus.PENDING
    ]
    return {
        "source": state["source_system"],
        "pacedUntil": max(later).isoformat() if later else None,
    }
