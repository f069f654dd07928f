"""``/v1/processes/runs/bulk``: steer many runs at once, with a preview and a second pair of eyes
(``processes.bulk.service``)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from kernel.openapi import error_responses
from kernel.scopes import DATA_READ, EXTENSIONS_DEPLOY
from kernel.users import acting_user
from processes import serializers as out
from processes.api.reads import run_failures
from processes.api.views import invoke_access_check
from processes.bulk.models import BulkState, BulkVerb
from processes.bulk.service import (
    bulk_decide,
    bulk_get,
    bulk_preview,
    bulk_shown,
    bulk_submit,
)
from processes.errors import BulkInvalid


class BulkIn(serializers.Serializer):
    action = serializers.ChoiceField(choices=BulkVerb.choices)
    filter = serializers.DictField(
        help_text="processId, state, pendingReason (lists allowed), createdAfter, createdBefore, "
        "input.<field> (a searchable input field) — as GET /v1/processes/runs takes them."
    )
    preview = serializers.BooleanField(help_text="true: count and fix the runs; false: perform.")
    bulkId = serializers.UUIDField(required=False, help_text="The preview to perform.")


class BulkPreviewOut(serializers.Serializer):
    bulkId = serializers.UUIDField()
    count = serializers.IntegerField(help_text="Runs the action would steer (fixed now).")
    sample = out.RunBriefOut(many=True, help_text="Up to 10 of them, newest first.")


class BulkSubmittedOut(serializers.Serializer):
    bulkId = serializers.UUIDField()
    state = serializers.ChoiceField(choices=BulkState.choices)


class BulkSkipOut(serializers.Serializer):
    runId = serializers.CharField()
    outcome = serializers.CharField(help_text="skipped or failed")
    why = serializers.CharField()


class BulkOut(BulkSubmittedOut):
    action = serializers.ChoiceField(choices=BulkVerb.choices)
    filter = serializers.DictField()
    count = serializers.IntegerField()
    done = serializers.IntegerField()
    skipped = serializers.IntegerField()
    failed = serializers.IntegerField()
    skips = BulkSkipOut(many=True, help_text="The first 100 runs skipped or failed, and why.")
    requestedBy = serializers.CharField(allow_null=True)
    approvedBy = serializers.CharField(allow_null=True)
    reason = serializers.CharField(allow_null=True, help_text="A rejection's reason.")


class BulkRejectIn(serializers.Serializer):
    reason = serializers.CharField()


def _body(request: Request) -> dict:
    if not isinstance(request.data, dict):
        raise BulkInvalid("the body must be a JSON object", field="body")
    return request.data


class BulkView(APIView):
    """Preview a bulk action (``preview: true``: nothing changes) or perform one you previewed."""

    required_scopes = {"post": EXTENSIONS_DEPLOY}

    @extend_schema(
        request=BulkIn,
        responses={
            200: OpenApiResponse(BulkPreviewOut, description="The preview: nothing changed."),
            202: OpenApiResponse(
                BulkSubmittedOut,
                description="Running (its progress at GET …/bulk/<bulkId>), or awaiting another "
                "administrator's approval (over steer.approval_over runs).",
            ),
            **error_responses(400, 401, 403, 404, 409),
        },
        operation_id="processes_runs_bulk",
    )
    def post(self, request: Request) -> Response:
        invoke_access_check(request)
        body, user = _body(request), acting_user(request)
        preview = body.get("preview")
        if not isinstance(preview, bool):
            raise BulkInvalid("preview must be true or false", field="preview")
        if preview:
            bulk, sample = bulk_preview(
                user=user, action=body.get("action"), filter=body.get("filter")
            )
            failures = run_failures(sample)
            return Response(
                {
                    "bulkId": str(bulk.pk),
                    "count": bulk.count,
                    "sample": [out.run_brief(run, failures.get(run.pk)) for run in sample],
                }
            )
        bulk = bulk_submit(
            user=user,
            bulk_id=body.get("bulkId"),
            action=body.get("action"),
            filter=body.get("filter"),
        )
        return Response({"bulkId": str(bulk.pk), "state": bulk.status}, status=202)


class BulkDetailView(APIView):
    """A bulk action: what, how many, who asked and approved, and how far it got."""

    required_scopes = {"get": DATA_READ}

    @extend_schema(responses={200: BulkOut, **error_responses(401, 404)})
    def get(self, request: Request, bulk_id: str) -> Response:
        return Response(bulk_shown(bulk_get(user=acting_user(request), bulk_id=bulk_id)))


class BulkApproveView(APIView):
    """Another administrator approves a bulk action awaiting approval: it starts."""

    required_scopes = {"post": EXTENSIONS_DEPLOY}

    @extend_schema(request=None, responses={200: BulkOut, **error_responses(401, 403, 404, 409)})
    def post(self, request: Request, bulk_id: str) -> Response:
        invoke_access_check(request)
        bulk = bulk_decide(user=acting_user(request), bulk_id=bulk_id, approve=True)
        return Response(bulk_shown(bulk))


class BulkRejectView(APIView):
    """Another administrator rejects a bulk action awaiting approval, saying why: it never runs."""

    required_scopes = {"post": EXTENSIONS_DEPLOY}

    @extend_schema(
        request=BulkRejectIn, responses={200: BulkOut, **error_responses(400, 401, 403, 404, 409)}
    )
    def post(self, request: Request, bulk_id: str) -> Response:
        invoke_access_check(request)
        bulk = bulk_decide(
            user=acting_user(request),
            bulk_id=bulk_id,
            approve=False,
            reason=_body(request).get("reason"),
        )
        return Response(bulk_shown(bulk))
