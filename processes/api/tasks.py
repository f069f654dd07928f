"""``/v1/tasks``: a person's tasks, and completing or rejecting one.

Reading needs ``data:read`` on a token; deciding needs ``data:write`` — a decision is the person's
input to a run that writes as its invoker, and a token decides as its owner, within their tasks.
"""

from __future__ import annotations

from typing import Any

import django_filters
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from kernel.filters import filter_apply, filter_parameters
from kernel.openapi import error_responses
from kernel.scopes import DATA_READ, DATA_WRITE
from kernel.text import text_problem
from kernel.users import acting_user
from processes.errors import TaskBodyInvalid
from processes.human_tasks.models import HumanTask, TaskState
from processes.human_tasks.serializers import (
    TaskCompleteIn,
    TaskListOut,
    TaskOut,
    TaskRejectIn,
    task_out,
)
from processes.human_tasks.service import (
    TASK_REASON_MAX_CHARS,
    output_size_problem,
    task_complete,
    task_reject,
    tasks_visible,
)

TASKS_LISTED_MAX = 500
DECIDE_ERRORS = error_responses(400, 401, 403, 404, 409)


class TaskFilter(django_filters.FilterSet):
    state = django_filters.MultipleChoiceFilter(
        choices=TaskState.choices, help_text="Only tasks in these states (repeatable)."
    )
    runId = django_filters.UUIDFilter(field_name="run_id", help_text="One run's tasks.")

    class Meta:
        model = HumanTask
        fields: list[str] = []


def _body(request: Request, field: str) -> Any:
    """The one field the verb takes: present, and nothing else beside it."""
    data = request.data
    if not isinstance(data, dict):
        raise TaskBodyInvalid(f"the body must be a JSON object with {field}", field="body")
    unknown = sorted(set(data) - {field})
    if unknown:
        raise TaskBodyInvalid(
            f"{unknown[0]} is not a key of this body (only {field})", field=unknown[0]
        )
    if field not in data:
        raise TaskBodyInvalid(f"{field} is required", field=field)
    return data[field]


def complete_output(request: Request) -> Any:
    output = _body(request, "output")
    problem = output_size_problem(output)
    if problem:
        raise TaskBodyInvalid(f"output {problem}", field="output")
    return output


def reject_reason(request: Request) -> str:
    reason = _body(request, "reason")
    if not isinstance(reason, str) or not reason.strip():
        raise TaskBodyInvalid("reason must be a non-empty string: say why", field="reason")
    if len(reason) > TASK_REASON_MAX_CHARS or text_problem(reason):
        raise TaskBodyInvalid(
            f"reason must be storable text of at most {TASK_REASON_MAX_CHARS} characters",
            field="reason",
        )
    return reason.strip()


class TaskListView(APIView):
    """``GET /v1/tasks``: your tasks and your groups' (an administrator's: every task), newest first."""

    required_scopes = {"get": DATA_READ}

    @extend_schema(
        parameters=filter_parameters(TaskFilter),
        responses={200: TaskListOut, **error_responses(400, 401)},
    )
    def get(self, request: Request) -> Response:
        visible = tasks_visible(acting_user(request)).select_related("decided_by")
        listed = filter_apply(TaskFilter, params=request.query_params, queryset=visible)
        tasks = listed.order_by("-created_at", "-pk")[:TASKS_LISTED_MAX]
        return Response({"tasks": [task_out(task) for task in tasks]})


class TaskCompleteView(APIView):
    """``POST /v1/tasks/:taskId/complete {output}``: the run goes on with ``ctx.steps[id].output``."""

    required_scopes = {"post": DATA_WRITE}

    @extend_schema(request=TaskCompleteIn, responses={200: TaskOut, **DECIDE_ERRORS})
    def post(self, request: Request, task_id: str) -> Response:
        output = complete_output(request)
        task = task_complete(user=acting_user(request), task_id=task_id, output=output)
        return Response(task_out(task))


class TaskRejectView(APIView):
    """``POST /v1/tasks/:taskId/reject {reason}``: the step fails ``TASK_REJECTED``."""

    required_scopes = {"post": DATA_WRITE}

    @extend_schema(request=TaskRejectIn, responses={200: TaskOut, **DECIDE_ERRORS})
    def post(self, request: Request, task_id: str) -> Response:
        reason = reject_reason(request)
        task = task_reject(user=acting_user(request), task_id=task_id, reason=reason)
        return Response(task_out(task))
