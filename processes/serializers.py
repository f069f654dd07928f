"""Output shapes of ``/v1/processes``: the seed's names (camelCase), one serializer per shape."""
from __future__ import annotations

from typing import Any

from rest_framework import serializers

from processes.models import ProcessRun, ProcessRunStep


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

    class Meta:
        model = ProcessRunStep
        fields = ("sequence", "stepId", "recordType", "pgRowId", "externalId", "disposition", "rowKey",
                  "slice", "refusal")


class RunSerializer(serializers.ModelSerializer):
    """The run half of the single-run read."""

    runId = serializers.UUIDField(source="run_id")
    processId = serializers.CharField(source="process_id")
    pendingReason = serializers.SerializerMethodField()
    invokedBy = serializers.SerializerMethodField()
    schedule = serializers.SerializerMethodField()
    startedAt = serializers.DateTimeField(source="started_at", allow_null=True)
    finishedAt = serializers.DateTimeField(source="finished_at", allow_null=True)
    moduleVersion = serializers.IntegerField(source="module_version")

    class Meta:
        model = ProcessRun
        fields = ("runId", "processId", "state", "reason", "outstanding", "mode", "pendingReason",
                  "invokedBy", "schedule", "startedAt", "finishedAt", "slices", "writes", "moduleVersion")

    def get_pendingReason(self, run: ProcessRun) -> str | None:
        return None if run.is_terminal else (run.pending_reason or None)

    def get_invokedBy(self, run: ProcessRun) -> str | None:
        return run.invoked_by.get_username() if run.invoked_by is not None else None

    def get_schedule(self, run: ProcessRun) -> str | None:
        return run.schedule_name or None


def run_with_steps(run: ProcessRun, steps: list[ProcessRunStep]) -> dict[str, Any]:
    """``{run: {...}, steps: [...]}``: the seed's single-run read."""
    return {"run": RunSerializer(run).data, "steps": StepSerializer(steps, many=True).data}


def run_settled(run: ProcessRun, steps: list[ProcessRunStep]) -> dict[str, Any]:
    """``?mode=sync``'s 200: ``{runId, processId, state, reason, outstanding, steps}``."""
    return {"runId": str(run.run_id), "processId": run.process_id, "state": run.state, "reason": run.reason,
            "outstanding": run.outstanding, "steps": StepSerializer(steps, many=True).data}


def run_queued(run: ProcessRun) -> dict[str, Any]:
    return {"runId": str(run.run_id), "processId": run.process_id, "state": run.state}


def sync_budget_exceeded(run: ProcessRun, budget_ms: int) -> dict[str, Any]:
    """``?mode=sync`` past the budget: not a failure; the run goes on and the answer names it."""
    return {
        "error": "sync_budget_exceeded", "runId": str(run.run_id), "processId": run.process_id,
        "state": run.state,
        "message": (f"the run did not settle within the synchronous budget of {budget_ms} ms "
                    "(processes.sync_budget_ms); it is still going — watch it with "
                    f"GET /v1/processes/runs/{run.run_id}"),
    }


def run_summary(run: ProcessRun, failure: dict[str, Any] | None) -> dict[str, Any]:
    """One run in the queue (and in a process's last runs); its failure travels with it."""
    return {"runId": str(run.run_id), "processId": run.process_id, "mode": run.mode, "state": run.state,
            "outstanding": run.outstanding, "failure": failure}


def run_brief(run: ProcessRun, failure: dict[str, Any] | None) -> dict[str, Any]:
    """A run in ``GET /v1/processes``: the queue's shape plus its reason and its clock."""
    return {**run_summary(run, failure), "reason": run.reason,
            "startedAt": serializers.DateTimeField().to_representation(run.started_at) if run.started_at else None,
            "finishedAt": serializers.DateTimeField().to_representation(run.finished_at) if run.finished_at else None}


def steering_answer(run: ProcessRun, *, is_queued: bool | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"runId": str(run.run_id), "state": run.state}
    if is_queued is not None:
        body["queued"] = is_queued
    return body
