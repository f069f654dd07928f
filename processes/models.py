"""Processes, their runs and the step ledger."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class Process(models.Model):
    """A deployed process (its code lives in the extension store) and its on/off switch."""

    id = models.CharField(max_length=200, primary_key=True)
    is_enabled = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=255, blank=True, default="")
    description = models.TextField(blank=True, default="")
    is_migration = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "process"
        verbose_name_plural = "processes"

    def __str__(self) -> str:
        return self.id


class RunState(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    COMMITTED = "committed"
    FAILED = "failed"
    ROLLED_BACK = "rolled_back"
    CANCELLED = "cancelled"
    # A triggered or scheduled run whose check failed before its first step (its input does not
    # fit the schema, the process is switched off): kept so the refusal is seen, never run.
    REFUSED = "refused"


TERMINAL_STATES = (
    RunState.COMMITTED,
    RunState.FAILED,
    RunState.ROLLED_BACK,
    RunState.CANCELLED,
    RunState.REFUSED,
)


class PendingReason(models.TextChoices):
    """Why a run that has not ended is not moving (``pendingReason``); blank once it ended.

    Labels are the values: the admin shows what the API answers.
    """

    QUEUED = "queued", "queued"  # waiting for a worker
    RUNNING = "running", "running"  # a delivery holds it
    # a delivery failed on a transient error and is tried again at ``wake_at`` (``retryAt``)
    RETRYING = "retrying", "retrying"
    # queued while every worker of its lane is busy (worked out when read: processes.pending)
    AWAITING_WORKER = "awaitingWorker", "awaitingWorker"
    # an awaitSource step waits for the source's verdict
    AWAITING_SOURCE = "awaitingSource", "awaitingSource"
    # a sleep step waits for its wakeAt; a delete waits for the delete window to free
    AWAITING_TIME = "awaitingTime", "awaitingTime"
    # a task step waits for a person to complete or reject it (processes.human_tasks)
    AWAITING_ACTION = "awaitingAction", "awaitingAction"
    # a waitFor step waits for a matching event (processes.events)
    AWAITING_INPUT = "awaitingInput", "awaitingInput"
    NONE = "", "—"  # the run ended


class LinkHow(models.TextChoices):
    """How a run was started from another (``linkedFrom``/``linkedTo``): steering, never a trigger."""

    RETRY = "retry"  # the same input again, after the old run ended failed/cancelled/...
    REDIRECT = "redirect"  # a new input; the old run was cancelled if it had not ended
    NONE = "", "—"


class RunMode(models.TextChoices):
    SYNC = "sync"
    ASYNC = "async"


class ProcessRun(models.Model):
    run_id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own (nor the ``invoked_by``/``linked_from`` ones Django adds): the indexes
    # below that lead with it serve its lookups, and every index is one more entry each time a
    # delivery moves the run (a state change is no HOT update): see ``Meta.indexes``.
    process_id = models.CharField(max_length=200)
    mode = models.CharField(max_length=8, choices=RunMode.choices, default=RunMode.ASYNC)
    state = models.CharField(max_length=16, choices=RunState.choices, default=RunState.QUEUED)
    reason = models.TextField(null=True, blank=True)
    outstanding = models.PositiveIntegerField(default=0)
    # Why a non-terminal run is not moving (a PendingReason).
    pending_reason = models.CharField(
        max_length=32, blank=True, choices=PendingReason.choices, default=PendingReason.QUEUED
    )
    wait_deadline = models.DateTimeField(null=True, blank=True)
    waiting_step = models.CharField(max_length=255, blank=True, default="")
    # When the engine must deliver this parked run (a wait budget's end, a window's free time):
    # the due-time index each lane's watch reads twice a second (engine.wakeups.wakeups_due).
    wake_at = models.DateTimeField(null=True, blank=True)
    # How many times the current step's provider failed transiently (``retrying``); 0 once the
    # step is recorded. Kept here so a dead worker's attempts still count (engine.ai_step).
    transient_attempts = models.PositiveIntegerField(default=0)
    invoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
    )
    schedule_name = models.CharField(max_length=200, blank=True, default="")
    # What started it, once: a triggered run's key (``record:<process>:<pgRowId>:<syncVersion>``,
    # ``event:<process>:<eventId>``). Unique, so one transition or one event never starts two runs.
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)
    input = models.JSONField(default=dict)
    module_version = models.PositiveIntegerField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    slices = models.PositiveIntegerField(default=0)
    writes = models.PositiveIntegerField(default=0)
    # The milliseconds deliveries have spent working the run, each added as it lets go of the run
    # (``engine.ending``): the runtime ceiling counts this, not the time parked on a wait.
    worked_ms = models.BigIntegerField(default=0)
    # Bumped on every new delivery (invoke, wake-up, resume, rollback); a delivery carrying an
    # older number is stale and does nothing (runner.run_claim). Re-sending a lost one keeps it.
    delivery = models.PositiveIntegerField(default=0)
    # When the current delivery was last handed to the broker: one not claimed within the lease
    # of this was lost with a worker host and is sent again (engine.redelivery).
    enqueued_at = models.DateTimeField(null=True, blank=True)
    # Who holds the run now (a worker's token) and until when; an expired lease is re-claimable.
    lease_owner = models.CharField(max_length=64, blank=True, default="")
    lease_until = models.DateTimeField(null=True, blank=True)
    access_fingerprint = models.CharField(max_length=64, blank=True, default="")
    cancel_requested = models.BooleanField(default=False)
    rollback_requested = models.BooleanField(default=False)
    # Why a rollback started (the failed step, or a request); the ending reason is built from it.
    rollback_cause = models.TextField(null=True, blank=True)
    # The ledger row (its sequence) whose refusal ended the run — not an earlier refused delete
    # the process let pass (onRefused: 'continue'). The queue's failure names this step.
    failed_sequence = models.PositiveIntegerField(null=True, blank=True)
    # A refused run's check: its code (``invalid_input``, ``process_disabled``) and the field or
    # switch it names; blank on every other run.
    refusal_code = models.CharField(max_length=64, blank=True, default="")
    refusal_field = models.CharField(max_length=255, blank=True, default="")
    # The run this one was started from by a retry or a redirect (``processes.steering``), and how;
    # the old run's ``linked_to`` lists the runs started from it.
    linked_from = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="linked_to",
        db_index=False,
    )
    linked_how = models.CharField(
        max_length=16, blank=True, choices=LinkHow.choices, default=LinkHow.NONE
    )
    # The OpenTelemetry trace its slices and steps are recorded in (32 hex digits; blank while
    # tracing is off): the request's that invoked it, else its first slice's (processes.observe).
    trace_id = models.CharField(max_length=32, blank=True, default="")
    # How many times the run was redriven from its failed step (``processes.redrive``).
    redrives = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "process_run"
        indexes = [
            # The reads walk these newest first and stop at their LIMIT (processes.api.reads):
            # one process's runs, a person's runs, one lane's runs, and every run (the queue).
            models.Index(fields=["process_id", "created_at"]),
            models.Index(fields=["state", "pending_reason"]),
            models.Index(fields=["invoked_by", "created_at"]),
            models.Index(fields=["mode", "created_at"], name="process_run_mode_newest"),
            models.Index(fields=["created_at", "run_id"], name="process_run_newest"),
            # The history purge walks finished runs oldest first (processes.history.selection).
            # It and the three below hold only the runs their column is set on (partial): a
            # queued or running run — most writes of the table — has no entry to update in them.
            models.Index(
                fields=["finished_at", "run_id"],
                name="process_run_finished",
                condition=models.Q(finished_at__isnull=False),
            ),
            # The lanes' watch reads the due parked runs (engine.wakeups, ``wake_at <= now``).
            models.Index(
                fields=["wake_at"],
                name="process_run_wake_at",
                condition=models.Q(wake_at__isnull=False),
            ),
            # The runs retried or redirected from one (``linked_to``; the purge's unlinking).
            models.Index(
                fields=["linked_from"],
                name="process_run_linked_from",
                condition=models.Q(linked_from__isnull=False),
            ),
        ]
        constraints = [
            # One run per trigger key (``processes.invoke``); most runs have none.
            models.UniqueConstraint(
                fields=["idempotency_key"],
                name="process_run_idempotency_key",
                condition=models.Q(idempotency_key__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.process_id} {self.run_id} ({self.state})"

    @property
    def is_terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    @property
    def refusal(self) -> dict | None:
        """A refused run's check, as ``{code, field, message}``; None for every other run."""
        if self.state != RunState.REFUSED:
            return None
        return {
            "code": self.refusal_code,
            "field": self.refusal_field or None,
            "message": self.reason,
        }


class Disposition(models.TextChoices):
    CONFIRMED = "confirmed"
    FAILED = "failed"
    SKIPPED = "skipped"
    ROLLED_BACK = "rolled_back"


class SkipReason(models.TextChoices):
    """Why a skipped ledger row did not write."""

    DECLINED = "declined", "declined"  # its when returned false, or its build null
    # the run stopped before it (a failure, a cap, a stop)
    NOT_REACHED = "not_reached", "not_reached"
    # a migration row's create found the record an earlier run made
    REUSED = "reused", "reused"
    NONE = "", "—"  # not skipped


class ProcessRunStep(models.Model):
    """One ledger row: what one step did on one visit. Unique per (run, step path, row key, visit,
    superseded): one row that counts, and each redrive's set-aside attempt beside it."""

    id = models.BigAutoField(primary_key=True)
    # Not indexed alone: (run, sequence) and the unique (run, step, row key, visit) lead with it.
    run = models.ForeignKey(
        ProcessRun, on_delete=models.CASCADE, related_name="ledger", db_index=False
    )
    sequence = models.PositiveIntegerField()
    step_id = models.CharField(max_length=255)
    record_type = models.CharField(max_length=64)
    action = models.CharField(max_length=8, default="create")  # create / update / delete
    pg_row_id = models.UUIDField(null=True, blank=True)
    external_id = models.CharField(max_length=255, null=True, blank=True)
    disposition = models.CharField(max_length=16, choices=Disposition.choices)
    row_key = models.CharField(max_length=255, blank=True, default="")
    slice = models.PositiveIntegerField(default=1)
    visit = models.PositiveIntegerField(default=1)
    # True when this step created the record (a rollback may delete it), false for reuse/update.
    created_record = models.BooleanField(default=False)
    # The step wrote (created, changed or deleted a record): what the per-run write ceiling counts.
    counts_write = models.BooleanField(default=False)
    rollback_keep = models.BooleanField(default=False)
    # An AI step's answer (action "ai"), handed on to later steps and reused for the rest of the
    # run; a task step's output (action "task"), what the person completed it with.
    answer = models.JSONField(null=True, blank=True)
    # awaitSource: the write landed but its verdict has not been taken yet.
    awaiting_verdict = models.BooleanField(default=False)
    # For skipped rows, why (a SkipReason); blank otherwise.
    skip_reason = models.CharField(
        max_length=16, blank=True, choices=SkipReason.choices, default=SkipReason.NONE
    )
    write_state_id = models.BigIntegerField(null=True, blank=True)
    refusal_code = models.CharField(max_length=64, null=True, blank=True)
    refusal_field = models.CharField(max_length=255, null=True, blank=True)
    refusal_message = models.TextField(null=True, blank=True)
    # When the step began (before its when/build ran); created_at is when its row was written.
    # Null for rows written before it existed: the timeline then starts the bar where the last ended.
    started_at = models.DateTimeField(null=True, blank=True)
    # A failed attempt a redrive set aside (the redrive's number; 0: the row counts): kept in the
    # history, read by no walk, so the step runs again under the same ledger key.
    superseded = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "process_run_step"
        ordering = ["sequence"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "step_id", "row_key", "visit", "superseded"],
                name="run_step_unique",
            ),
        ]
        indexes = [
            models.Index(fields=["run", "sequence"]),
            # Which runs wrote a record: the run page's linked runs, a rollback delete's verdict.
            models.Index(fields=["pg_row_id"], name="run_step_pg_row_id"),
            # The steps waiting on a source's verdict, read inside every verdicts' transaction.
            models.Index(
                fields=["write_state_id"],
                name="run_step_awaiting_verdict",
                condition=models.Q(awaiting_verdict=True),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run_id} #{self.sequence} {self.step_id} {self.disposition}"

    @property
    def refusal(self) -> dict | None:
        if not self.refusal_code:
            return None
        return {
            "code": self.refusal_code,
            "field": self.refusal_field,
            "message": self.refusal_message,
        }


class ProcessRunSlice(models.Model):
    """One slice of a migration: the rows its one outstanding read offered (up to the slice's row
    budget) and how many that read returned. A crash re-delivery works through the same rows."""

    id = models.BigAutoField(primary_key=True)
    run = models.ForeignKey(ProcessRun, on_delete=models.CASCADE, related_name="slice_log")
    number = models.PositiveIntegerField()
    rows = models.JSONField(default=list)
    total_read = models.PositiveIntegerField(default=0)
    # The process version this slice ran: a deploy takes effect at the next slice, never mid-slice.
    module_version = models.PositiveIntegerField(null=True, blank=True)
    is_open = models.BooleanField(default=True)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "process_run_slice"
        ordering = ["number"]
        constraints = [models.UniqueConstraint(fields=["run", "number"], name="run_slice_unique")]

    def __str__(self) -> str:
        return f"{self.run_id} slice {self.number}"


from processes.bulk.models import BulkAction  # noqa: E402,F401  (bulk steering)
from processes.events.models import Event, EventWait  # noqa: E402,F401  (the events' tables)
from processes.heartbeats import ClusterHeartbeat  # noqa: E402,F401  (the workers' heartbeats)
from processes.history.models import HistoryPurgeLease  # noqa: E402,F401  (the purge's lease)
from processes.human_tasks.models import HumanTask  # noqa: E402,F401  (the tasks' table)
from processes.run_search.models import RunSearchKey  # noqa: E402,F401  (runs found by input)
from processes.run_tally_models import (  # noqa: E402,F401  (the queue's counts)
    ProcessRunTally,
    ProcessRunTallyDelta,
)
from processes.schedules.models import ProcessSchedule  # noqa: E402,F401  (the schedules' table)
