"""``POST /v1/processes/<id>/plan``: what a run would do now, writing nothing
(``processes.dry_run``)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from kernel.filters import FilterInvalid
from kernel.openapi import error_responses
from kernel.scopes import EXTENSIONS_DEPLOY
from kernel.users import acting_user
from processes import serializers as out
from processes.api.views import invoke_access_check, request_input
from processes.dry_run import PLAN_ROWS, PLAN_ROWS_MAX, run_plan


class PlanGuardrailOut(serializers.Serializer):
    rule = serializers.CharField()
    decision = serializers.ChoiceField(choices=["hold", "refuse", "window"])
    message = serializers.CharField(allow_null=True)


class PlanHookOut(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["refuse"])
    code = serializers.CharField()
    message = serializers.CharField(allow_null=True)


class PlanStepOut(serializers.Serializer):
    stepId = serializers.CharField()
    kind = serializers.CharField(help_text="create, update, delete, ai, task, sleep, waitFor, …")
    recordType = serializers.CharField(allow_null=True)
    action = serializers.ChoiceField(choices=["create", "update", "delete", "skip", "wait"])
    record = serializers.DictField(allow_null=True, help_text="{parent, lines} it would write.")
    key = serializers.CharField(allow_null=True, help_text="A migration row's key.")
    guardrail = PlanGuardrailOut(allow_null=True)
    hook = PlanHookOut(allow_null=True)


class PlanRefusalOut(serializers.Serializer):
    stepId = serializers.CharField()
    code = serializers.CharField()
    field = serializers.CharField(allow_null=True)
    message = serializers.CharField(allow_null=True)


class PlanUnknownOut(serializers.Serializer):
    stepId = serializers.CharField()
    why = serializers.CharField()


class PlanOut(serializers.Serializer):
    processId = serializers.CharField()
    version = serializers.IntegerField()
    steps = PlanStepOut(many=True)
    refusals = PlanRefusalOut(many=True)
    unknowns = PlanUnknownOut(many=True)
    rowsOutstanding = serializers.IntegerField(
        required=False, help_text="A migration: rows still outstanding after the planned ones."
    )


class ProcessPlanView(APIView):
    """The body is the input, as for an invoke. Nothing is written; the same checks refuse."""

    required_scopes = {"post": EXTENSIONS_DEPLOY}

    @extend_schema(
        request={"application/json": out.INVOKE_INPUT},
        parameters=[
            OpenApiParameter(
                "rows",
                int,
                description=f"A migration: rows to plan, 1 to {PLAN_ROWS_MAX} (default {PLAN_ROWS}).",
            )
        ],
        responses={200: PlanOut, **error_responses(400, 401, 403, 404, 409)},
        operation_id="processes_plan",
    )
    def post(self, request: Request, process_id: str) -> Response:
        invoke_access_check(request)
        raw = request.query_params.get("rows")
        if raw is not None and not (raw.isdigit() and 1 <= int(raw) <= PLAN_ROWS_MAX):
            raise FilterInvalid(f"rows: a whole number from 1 to {PLAN_ROWS_MAX}", field="rows")
        answer = run_plan(
            process_id=process_id,
            body=request_input(request),
            user=acting_user(request),
            rows=int(raw) if raw is not None else PLAN_ROWS,
        )
        return Response(answer)
