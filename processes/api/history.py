"""``POST /v1/history/purge``: purge the finished runs now (administrators)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from kernel.openapi import error_responses
from kernel.scopes import EXTENSIONS_DEPLOY
from kernel.users import acting_user, admin_check
from processes.history.body import purge_body_check
from processes.history.purge import history_purge


class HistoryPurgeIn(serializers.Serializer):
    dryRun = serializers.BooleanField(
        required=False, help_text="Count what would go; change nothing (default false)."
    )
    finishedBefore = serializers.DateTimeField(
        required=False,
        help_text="Purge the finished runs that finished before this time (with its offset), "
        "instead of history.retain_days / history.retain_runs, for this call.",
    )


class HistoryPurgeOut(serializers.Serializer):
    runs = serializers.IntegerField()
    ledgerRows = serializers.IntegerField()
    events = serializers.IntegerField(help_text="The purged runs' event waits.")
    tasks = serializers.IntegerField()
    trailRows = serializers.IntegerField(help_text="Write-trail rows past trail.retain_days.")
    auditEvents = serializers.IntegerField(help_text="Audit events past audit.retain_days.")
    archived = serializers.CharField(
        allow_null=True, help_text="The archive file the runs were appended to; null: none."
    )


class HistoryPurgeView(APIView):
    """Purge (``dryRun``: count) the finished runs past the thresholds, or finished before
    ``finishedBefore``, with their ledgers, event waits and tasks. 409 while another purge runs,
    or when the archive directory cannot be written (nothing deleted)."""

    # An administrator's operation on the instance, like a setting's change.
    required_scopes = {"post": EXTENSIONS_DEPLOY}

    @extend_schema(
        request=HistoryPurgeIn,
        responses={200: HistoryPurgeOut, **error_responses(400, 401, 403, 409)},
    )
    def post(self, request: Request) -> Response:
        admin_check(request, "only an administrator may purge the run history")
        dry_run, finished_before = purge_body_check(request.data)
        result = history_purge(
            by=acting_user(request), dry_run=dry_run, finished_before=finished_before
        )
        return Response(result.answer())
