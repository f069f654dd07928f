"""The bodies of ``/v1/tasks``: the task as every reader sees it, and the two verbs' bodies."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from processes.human_tasks.models import HumanTask, TaskState
from processes.human_tasks.service import task_state_shown


def task_out(task: HumanTask) -> dict[str, Any]:
    """One task, in the seed's names."""
    return {
        "taskId": str(task.task_id),
        "runId": str(task.run_id),
        "processId": task.process_id,
        "stepId": task.step_id,
        "title": task.title,
        "details": task.details,
        "assignee": task.assignee,
        "state": task_state_shown(task),
        "createdAt": serializers.DateTimeField().to_representation(task.created_at),
        "expiresAt": (
            serializers.DateTimeField().to_representation(task.expires_at)
            if task.expires_at
            else None
        ),
        "decidedBy": task.decided_by.get_username() if task.decided_by else None,
        "decidedAt": (
            serializers.DateTimeField().to_representation(task.decided_at)
            if task.decided_at
            else None
        ),
        "output": task.output,
        "reason": task.reason or None,
    }


# --- for the schema (checked against real answers in tests/processes/test_api_tasks.py) ---------


class TaskOut(serializers.Serializer):
    taskId = serializers.UUIDField()
    runId = serializers.UUIDField()
    processId = serializers.CharField()
    stepId = serializers.CharField()
    title = serializers.CharField()
    details = serializers.JSONField(allow_null=True, help_text="What task.details returned.")
    assignee = serializers.CharField(help_text="A username, or group:<name>.")
    state = serializers.ChoiceField(choices=TaskState.choices)
    createdAt = serializers.DateTimeField()
    expiresAt = serializers.DateTimeField(allow_null=True, help_text="From task.timeout.")
    decidedBy = serializers.CharField(allow_null=True)
    decidedAt = serializers.DateTimeField(allow_null=True)
    output = serializers.JSONField(allow_null=True, help_text="What it was completed with.")
    reason = serializers.CharField(
        allow_null=True, help_text="Why it was rejected, expired or cancelled."
    )


class TaskListOut(serializers.Serializer):
    tasks = TaskOut(many=True, help_text="Newest first, at most 500.")


class TaskCompleteIn(serializers.Serializer):
    output = serializers.JSONField(
        help_text="Any JSON: the step's ctx.steps[id].output (at most 100,000 characters)."
    )


class TaskRejectIn(serializers.Serializer):
    reason = serializers.CharField(help_text="Why; on the step's TASK_REJECTED refusal.")
