"""Output shapes of ``/v1/processes``: the seed's names (camelCase), one serializer per shape."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from processes.codes import ProcessError
from processes.models import (
    LinkHow,
    PendingReason,
    ProcessRun,
    ProcessRunSlice,
    ProcessRunStep,
    RunMode,
    RunState,
)
from processes.pending_detail import PendingDetailOut, pending_detail
from processes.run_rows import RunSummarized


class RefusalSerializer(serializers.Serializer):
    code = serializers.CharField()
    field = serializers.CharField(allow_null=True)
    message = serializers.CharField(allow_null=True)


class StepSerializer(serializers.ModelSerializer):
    """One ledger entry, as ``GET /v1/processes/runs/:runId`` answers it."""

    stepId = serializers.CharField(source="step_id")
    recordType = serializers.CharField(source="record_type")
    pgRowId = serializers.UUIDField(source="pg_row_id", allow_null=True)
    externalId = serializers.CharField(source="external_id", allow_null=True)
    rowKey = serializers.CharField(source="row_key")
    refusal = RefusalSerializer(allow_null=True)
    # A failed attempt a redrive set aside (the redrive's number), 0 on every row that counts.
    superseded = serializers.IntegerField()

    class Meta:
        model = ProcessRunStep
        fields = (
            "sequence",
            "stepId",
            "recordType",
            "pgRowId",
            "externalId",
            "disposition",
            "rowKey",
            "slice",
            "refusal",
            "superseded",
        )


class SliceSerializer(serializers.ModelSerializer):
    """One slice of a migration: the process version it ran and its clock."""

    slice = serializers.IntegerField(source="number")
    moduleVersion = serializers.IntegerField(source="module_version", allow_null=True)
    startedAt = serializers.DateTimeField(source="started_at")
    finishedAt = serializers.DateTimeField(source="finished_at", allow_null=True)

    class Meta:
        model = ProcessRunSlice
        fields = ("slice", "moduleVersion", "startedAt", "finishedAt")


class LinkOut(serializers.Serializer):
    """One link between runs made by steering: ``{runId, how: 'retry' | 'redirect'}``."""

    runId = serializers.UUIDField()
    how = serializers.ChoiceField(choices=[LinkHow.RETRY, LinkHow.REDIRECT])


class RunSerializer(serializers.ModelSerializer):
    """The run half of the single-run read."""

    runId = serializers.UUIDField(source="run_id")
    processId = serializers.CharField(source="process_id")
    pendingReason = serializers.SerializerMethodField()
    # When a run parked on the clock (a sleep, a delete window) is due, and when a delivery that
    # failed on a transient error is tried again; null otherwise.
    wakeAt = serializers.SerializerMethodField()
    retryAt = serializers.SerializerMethodField()
    # awaitingSource only: {source, pacedUntil} — which source, and until when it is paced.
    pendingDetail = serializers.SerializerMethodField()
    invokedBy = serializers.SerializerMethodField()
    schedule = serializers.SerializerMethodField()
    startedAt = serializers.DateTimeField(source="started_at", allow_null=True)
    finishedAt = serializers.DateTimeField(source="finished_at", allow_null=True)
    moduleVersion = serializers.IntegerField(source="module_version")
    # A migration's slices, each with the version it ran (a deploy is picked up at the next slice).
    sliceLog = SliceSerializer(source="slice_log", many=True, read_only=True)
    # A refused run's check (the field or the switch it names); null on every other run.
    refusal = RefusalSerializer(allow_null=True, read_only=True)
    # The run a retry or redirect started this one from, and the runs started from this one.
    linkedFrom = serializers.SerializerMethodField()
    linkedTo = serializers.SerializerMethodField()

    class Meta:
        model = ProcessRun
        fields = (
            "runId",
            "processId",
            "state",
            "reason",
            "outstanding",
            "mode",
            "pendingReason",
            "wakeAt",
            "retryAt",
            "pendingDetail",
            "invokedBy",
            "schedule",
            "startedAt",
            "finishedAt",
            "slices",
            "writes",
            "moduleVersion",
            "sliceLog",
            "refusal",
            "linkedFrom",
            "linkedTo",
            "redrives",
        )

    def get_pendingReason(self, run: ProcessRun) -> str | None:
        return None if run.is_terminal else (run.pending_reason or None)

    def _due(self, run: ProcessRun, reason: str) -> str | None:
        if run.is_terminal or run.pending_reason != reason:
            return None
        at = run.wake_at or run.wait_deadline  # the watch clears wake_at as it sends the wake-up
        return serializers.DateTimeField().to_representation(at) if at else None

    def get_wakeAt(self, run: ProcessRun) -> str | None:
        return self._due(run, PendingReason.AWAITING_TIME)

    def get_retryAt(self, run: ProcessRun) -> str | None:
        return self._due(run, PendingReason.RETRYING)

    @extend_schema_field(PendingDetailOut(allow_null=True))
    def get_pendingDetail(self, run: ProcessRun) -> dict[str, str | None] | None:
        return pending_detail(run)

    @extend_schema_field(LinkOut(allow_null=True))
    def get_linkedFrom(self, run: ProcessRun) -> dict[str, str] | None:
        if run.linked_from_id is None:
            return None
        return {"runId": str(run.linked_from_id), "how": run.linked_how}

    @extend_schema_field(LinkOut(many=True))
    def get_linkedTo(self, run: ProcessRun) -> list[dict[str, str]]:
        later = run.linked_to.order_by("created_at", "pk").values_list("pk", "linked_how")
        return [{"runId": str(pk), "how": how} for pk, how in later]

    def get_invokedBy(self, run: ProcessRun) -> str | None:
        return run.invoked_by.get_username() if run.invoked_by is not None else None

    def get_schedule(self, run: ProcessRun) -> str | None:
        return run.schedule_name or None


def run_with_steps(run: ProcessRun, steps: list[ProcessRunStep]) -> dict[str, Any]:
    """``{run: {...}, steps: [...]}``: the seed's single-run read."""
    return {"run": RunSerializer(run).data, "steps": StepSerializer(steps, many=True).data}


def run_settled(run: ProcessRun, steps: list[ProcessRunStep]) -> dict[str, Any]:
    """``?mode=sync``'s 200: ``{runId, processId, state, reason, outstanding, steps}``."""
    return {
        "runId": str(run.run_id),
        "processId": run.process_id,
        "state": run.state,
        "reason": run.reason,
        "outstanding": run.outstanding,
        "steps": StepSerializer(steps, many=True).data,
    }


def run_queued(run: ProcessRun) -> dict[str, Any]:
    return {"runId": str(run.run_id), "processId": run.process_id, "state": run.state}


def sync_budget_exceeded(run: ProcessRun, budget_ms: int) -> dict[str, Any]:
    """``?mode=sync`` past the budget: not a failure; the run goes on and the answer names it.

    The state is ``queued`` as the contract writes it, whatever the worker has reached meanwhile:
    the answer is a ticket, like the asynchronous 202, and the run's own read says where it is."""
    return {
        "error": ProcessError.SYNC_BUDGET_EXCEEDED,
        "runId": str(run.run_id),
        "processId": run.process_id,
        "state": RunState.QUEUED,
        "message": (
            f"the run did not settle within the synchronous budget of {budget_ms} ms "
            "(processes.sync_budget_ms); it is still going — watch it with "
            f"GET /v1/processes/runs/{run.run_id}"
        ),
    }


def run_summary(run: RunSummarized, failure: dict[str, Any] | None) -> dict[str, Any]:
    """One run in the queue (and in a process's last runs); its failure travels with it."""
    return {
        "runId": str(run.run_id),
        "processId": run.process_id,
        "mode": run.mode,
        "state": run.state,
        "pendingReason": None if run.is_terminal else (run.pending_reason or None),
        "outstanding": run.outstanding,
        "failure": failure,
    }


def run_brief(run: ProcessRun, failure: dict[str, Any] | None) -> dict[str, Any]:
    """A run in ``GET /v1/processes``: the queue's shape plus its reason and its clock."""
    return {
        **run_summary(run, failure),
        "reason": run.reason,
        "startedAt": serializers.DateTimeField().to_representation(run.started_at)
        if run.started_at
        else None,
        "finishedAt": serializers.DateTimeField().to_representation(run.finished_at)
        if run.finished_at
        else None,
    }


# --- the other bodies, for the schema ---------------------------------------------------------
# The functions above render them; these say the same shapes to the OpenAPI schema and are checked
# against real answers in tests/turbobase/test_openapi.py.

# The process's input is whatever its own inputSchema says, so one path cannot list its fields.
INVOKE_INPUT = {
    "type": "object",
    "additionalProperties": {},
    "description": "The process's input, bare; checked against the process's "
    "inputSchema. No body reads as {}.",
}


class FailureOut(serializers.Serializer):
    """Why a run failed: its first failed step, or (failed before any step) the run's reason."""

    stepId = serializers.CharField(allow_null=True)
    code = serializers.CharField(allow_null=True)
    message = serializers.CharField(allow_null=True)


class RunSummaryOut(serializers.Serializer):
    """One run in the queue."""

    runId = serializers.UUIDField()
    processId = serializers.CharField()
    mode = serializers.ChoiceField(choices=RunMode.choices)
    state = serializers.ChoiceField(choices=RunState.choices)
    pendingReason = serializers.ChoiceField(
        choices=[r for r in PendingReason.values if r], allow_null=True
    )
    outstanding = serializers.IntegerField()
    failure = FailureOut(allow_null=True)


class RunBriefOut(RunSummaryOut):
    """One of a process's last runs: the queue's shape plus its reason and its clock."""

    reason = serializers.CharField(allow_null=True)
    startedAt = serializers.DateTimeField(allow_null=True)
    finishedAt = serializers.DateTimeField(allow_null=True)


class TriggerOut(serializers.Serializer):
    """How a process fires: by hand (``manual``), by a record entering a state (``record``), by an
    event (``event``), or by its first schedule."""

    kind = serializers.ChoiceField(choices=("manual", "schedule", "record", "event"))
    record = serializers.CharField(required=False, help_text="Record triggers only: the type.")
    enters = serializers.DictField(
        required=False, help_text="Record triggers only: the field values the record enters."
    )
    event = serializers.CharField(required=False, help_text="Event triggers only: the name.")
    name = serializers.CharField(required=False, help_text="Schedules only.")
    cron = serializers.CharField(required=False, help_text="Schedules only.")
    tz = serializers.CharField(required=False, help_text="Schedules only.")
    timezone = serializers.CharField(required=False, help_text="Schedules only; repeats tz.")
    isPaused = serializers.BooleanField(required=False, help_text="Schedules only.")


class ProcessOut(serializers.Serializer):
    id = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    trigger = TriggerOut(help_text="Its own trigger if it declares one, else its schedule.")
    triggers = TriggerOut(
        many=True, help_text="Every way it fires besides by hand; [manual] when none."
    )
    enabled = serializers.BooleanField()
    disabledReason = serializers.CharField(allow_null=True, help_text="Which switch says no.")
    isMigration = serializers.BooleanField()
    version = serializers.IntegerField()
    lastRuns = RunBriefOut(many=True, help_text="Your last five runs, newest first.")


class ProcessListOut(serializers.Serializer):
    processes = ProcessOut(many=True)


RunCountsOut = type(
    "RunCountsOut",
    (serializers.Serializer,),
    {
        "__doc__": "Runs per state; every state is answered, even at 0.",
        **{state: serializers.IntegerField() for state in RunState.values},
    },
)


class QueueOut(serializers.Serializer):
    runs = RunSummaryOut(
        many=True, help_text="Newest first, at most processes.queue_max_runs (500)."
    )
    counts = RunCountsOut()
    truncated = serializers.BooleanField(help_text="True when more runs match than are listed.")


class RunsPageOut(serializers.Serializer):
    """One keyset page of a process's runs (``GET /v1/processes/:id/runs``)."""

    runs = RunBriefOut(many=True, help_text="Newest first (created_at, then run id).")
    next = serializers.CharField(
        allow_null=True,
        help_text="Pass as cursor for the following page; null on the last page.",
    )


class RunDetailOut(serializers.Serializer):
    run = RunSerializer()
    steps = StepSerializer(many=True)


class RunQueuedOut(serializers.Serializer):
    runId = serializers.UUIDField()
    processId = serializers.CharField()
    state = serializers.ChoiceField(choices=RunState.choices)


class RunSettledOut(RunQueuedOut):
    """``?mode=sync``: the run settled within the synchronous budget."""

    reason = serializers.CharField(allow_null=True)
    outstanding = serializers.IntegerField()
    steps = StepSerializer(many=True)


class SyncBudgetExceededOut(RunQueuedOut):
    """``?mode=sync`` past the budget: not a failure; the run goes on."""

    error = serializers.ChoiceField(choices=("sync_budget_exceeded",))
    message = serializers.CharField()
