"""``POST /v1/batch``: a thin view over ``records.batch``."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from records.batch import batch_read, batch_reads_parse


class BatchReadView(APIView):
    """Several PostgREST reads in one request, each as the caller and under the batch row cap."""

    @extend_schema(request=dict, responses={200: dict})
    def post(self, request: Request) -> Response:
        reads = batch_reads_parse(request.data)
        return Response({"results": batch_read(user=request.user, reads=reads)})
