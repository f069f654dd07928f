"""``GET /v1/data/<recordType>/<pgRowId>/lineage``: every write that touched the record."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from kernel.openapi import error_responses
from kernel.scopes import DATA_READ
from kernel.users import acting_user
from records.lineage import record_lineage


class LineageSourceOut(serializers.Serializer):
    verdict = serializers.CharField(help_text="The outbound write's status: pending, confirmed, …")
    externalId = serializers.CharField(allow_null=True, help_text="The id the source minted.")


class LineageEntryOut(serializers.Serializer):
    at = serializers.DateTimeField()
    action = serializers.CharField(help_text="create, update, delete or settle.")
    outcome = serializers.CharField(help_text="allowed, refused, held, duplicate, …")
    actor = serializers.CharField(allow_null=True, help_text="Who wrote (the run's invoker).")
    runId = serializers.CharField(allow_null=True)
    processId = serializers.CharField(allow_null=True)
    version = serializers.IntegerField(allow_null=True)
    stepId = serializers.CharField(allow_null=True)
    inputExcerpt = serializers.CharField(
        allow_null=True,
        help_text="The run's input, cut at 200 characters; null unless you may see the run.",
    )
    # DRF's metaclass takes declared fields off the class, so naming one ``source`` is safe.
    source = LineageSourceOut(  # type: ignore[assignment]
        allow_null=True, help_text="A connected type's outbound write."
    )


class RecordLineageView(APIView):
    """Every write that touched the record, oldest first: who, which run and step, and what its
    source answered. A record you cannot read is 404 (an administrator also reads a deleted one's)."""

    required_scopes = {"get": DATA_READ}

    @extend_schema(
        responses={200: LineageEntryOut(many=True), **error_responses(401, 404)},
        operation_id="data_lineage",
    )
    def get(self, request: Request, record_type: str, pg_row_id: str) -> Response:
        entries = record_lineage(
            user=acting_user(request), record_type=record_type, pg_row_id=pg_row_id
        )
        return Response([entry.as_json() for entry in entries])
