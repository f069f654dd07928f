"""``POST /v1/processes/runs/:runId/redrive``: carry a failed run on from its failed step."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from kernel.openapi import error_responses
from kernel.scopes import EXTENSIONS_DEPLOY
from kernel.users import acting_user
from processes import serializers as out
from processes.api.reads import run_ledger
from processes.api.views import invoke_access_check, request_input
from processes.redrive import RedriveVersion, redrive_body_parse, run_redrive


class RedriveIn(serializers.Serializer):
    version = serializers.ChoiceField(
        choices=list(RedriveVersion),
        required=False,
        help_text="The version the failed step and those after it run on: the run's own "
        "(current, the default) or the newest deployed (latest).",
    )


class ChangedSinceOut(serializers.Serializer):
    recordType = serializers.CharField()
    pgRowId = serializers.UUIDField()
    stepId = serializers.CharField(help_text="The run's last step that wrote the record.")


class RedriveOut(out.RunDetailOut):
    changedSince = ChangedSinceOut(
        many=True,
        help_text="Records the run's committed steps wrote that someone changed since; the "
        "redrive goes on and reads them fresh.",
    )


class RunRedriveView(APIView):
    """202 with the run (queued again, same id) and ``changedSince``; 409
    ``process_run_not_redrivable`` naming the state unless the run failed; 404 for a run that is
    not yours."""

    required_scopes = {"post": EXTENSIONS_DEPLOY}

    @extend_schema(
        request=RedriveIn,
        responses={202: RedriveOut, **error_responses(400, 401, 403, 404, 409)},
    )
    def post(self, request: Request, run_id: str) -> Response:
        invoke_access_check(request)
        version = redrive_body_parse(request_input(request))
        redriven = run_redrive(user=acting_user(request), run_id=run_id, version=version)
        run = redriven.run
        body = {**out.run_with_steps(run, run_ledger(run)), "changedSince": redriven.changed_since}
        return Response(body, status=202)
