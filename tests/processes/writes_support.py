"""The run row's ``writes`` against its ledger: a claim takes the column as the truth about what
earlier deliveries wrote (``processes.engine.ledger.ledger_position``), so every commit that
writes a ledger row counting a write must leave the column equal to the ledger's count — also
at the instant a worker is SIGKILLed, a group is written partly, or a batch rolls back."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q

from processes.models import TERMINAL_STATES, ProcessRun


def assert_writes_counted(run_id: Any) -> None:
    """The run's ``writes`` equals its ledger's rows that count a write, read in one statement
    (one snapshot: a commit landing meanwhile cannot split the two). The one allowed gap: a run
    still open with a cancel request, whose cut group wrote its first row with the group's count
    (``ledger.writes_kept``: a claim counts the ledger then)."""
    run = (
        ProcessRun.objects.filter(pk=run_id)
        .annotate(counted=Count("ledger", filter=Q(ledger__counts_write=True)))
        .values("writes", "counted", "cancel_requested", "state")
        .get()
    )
    if run["cancel_requested"] and run["state"] not in TERMINAL_STATES:
        return
    assert run["writes"] == run["counted"], (
        f"run {run_id}: writes column {run['writes']}, ledger counts {run['counted']}"
    )
