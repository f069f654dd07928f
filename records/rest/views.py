"""``GET /v1/rest/<resource>?<PostgREST query>``: a thin view over ``records.rest.execute``."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.views import APIView

from records.rest.errors import RestReadOnly
from records.rest.execute import rest_read_encoded
from records.rest.parser import query_parse_parts


class RestReadView(APIView):
    """Read rows of a record type (or a registered resource) with PostgREST syntax, under RLS."""

    @extend_schema(
        responses={200: OpenApiResponse(description="a JSON array of rows keyed by column name")},
    )
    def get(self, request: Request, resource: str) -> HttpResponse:
        query = query_parse_parts(path=resource, query_string=request.META.get("QUERY_STRING", ""))
        body = rest_read_encoded(user=request.user, query=query)
        return HttpResponse(body, content_type="application/json")

    def http_method_not_allowed(self, request: HttpRequest, *args, **kwargs):
        raise RestReadOnly(
            f"/v1/rest is a read and answers GET only; {request.method} is refused. "
            "Write records through /v1/data",
            field=None,
        )

    def options(self, request: HttpRequest, *args, **kwargs):
        return self.http_method_not_allowed(request, *args, **kwargs)
