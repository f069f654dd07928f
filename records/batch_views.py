"""``POST /v1/batch``: a thin view over ``records.batch``."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from kernel.openapi import error_responses
from kernel.scopes import DATA_READ
from kernel.users import acting_user
from records.batch import batch_read, batch_reads_parse
from records.serializers import BatchIn, BatchOut


class BatchReadView(APIView):
    """Several PostgREST reads in one request, each as the caller and under the batch row cap."""

    # A POST, but only ever a read.
    required_scopes = {"post": DATA_READ}

    @extend_schema(request=BatchIn, responses={200: BatchOut, **error_responses(400, 401)})
    def post(self, request: Request) -> Response:
        reads = batch_reads_parse(request.data)
        return Response({"results": batch_read(user=acting_user(request), reads=reads)})
