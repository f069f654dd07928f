"""awaitSource: take the outbound worker's verdict for a step's write, without holding a worker.

A waiting run records why (``pending_reason``) and until when (``wait_deadline``) and gives its
worker back. The verdict (``records.verdicts.source_verdict``) re-queues it; the sweeper
re-queues waits whose time is up and any run whose wake-up was lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from processes.engine.ledger import Refused
from processes.engine.statuses import VerdictWait
from processes.models import Disposition, ProcessRunStep
from records.codes import RefusalCode
from records.models import Record, RecordWriteState, WriteStatus
from sources.pacing import pace_due


@dataclass(frozen=True)
class VerdictOutcome:
    status: VerdictWait


def verdict_take(row: ProcessRunStep) -> VerdictOutcome:
    """Fold the write's verdict, if there is one, into the waiting ledger row."""
    state = None
    if row.write_state_id is not None:
        state = RecordWriteState.reads.filter(pk=row.write_state_id).first()
    if state is None or state.status in (WriteStatus.PENDING, WriteStatus.HELD):
        return VerdictOutcome(VerdictWait.PENDING)
    with transaction.atomic():
        row.awaiting_verdict = False
        if state.status in (WriteStatus.CONFIRMED, WriteStatus.SETTLED):
            record = Record.reads.filter(pk=state.record_id).values("external_id").first()
            row.external_id = (record["external_id"] if record else None) or state.external_id
            row.save(update_fields=["awaiting_verdict", "external_id", "updated_at"])
            return VerdictOutcome(VerdictWait.CONFIRMED)
        if state.status == WriteStatus.SETTLE_CONFLICT:
            refusal = Refused(
                RefusalCode.SOURCE_APPLIED_UNLINKED,
                state.field or None,
                state.message or "the source created the record but linking it back failed",
            )
            row.external_id = state.external_id
        else:
            refusal = Refused(
                state.reason_code or RefusalCode.SOURCE_REFUSED,
                state.field or None,
                state.message or "the source refused the write",
            )
        row.disposition = Disposition.FAILED
        row.refusal_code, row.refusal_field, row.refusal_message = (
            refusal.code,
            refusal.field,
            refusal.message,
        )
        row.save()
        return VerdictOutcome(VerdictWait.FAILED)


def runs_waiting_on(write_state_id: int) -> list[Any]:
    return list(
        ProcessRunStep.objects.filter(write_state_id=write_state_id, awaiting_verdict=True)
        .values_list("run_id", flat=True)
        .distinct()
    )


def verdict_pending(row: ProcessRunStep) -> bool:
    """Whether the write the row waits on has no verdict yet."""
    if row.write_state_id is None:
        return False
    return RecordWriteState.reads.filter(
        pk=row.write_state_id, status__in=[WriteStatus.PENDING, WriteStatus.HELD]
    ).exists()


def source_wait_detail(run_pk: Any) -> dict[str, str | None] | None:
    """What an ``awaitingSource`` run waits on: ``{"source", "pacedUntil"}``, worked out when read.

    ``pacedUntil`` is when its write may next be sent — the source backing off (429/503
    Retry-After, a timeout) or its rate, or the write's own retry — and null while it may go now.
    """
    write_state_id = (
        ProcessRunStep.objects.filter(run_id=run_pk, awaiting_verdict=True)
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
