"""``GET /v1/rest/<resource>?<PostgREST query>``: a thin view over ``records.rest.execute``."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.views import APIView

from kernel.openapi import error_responses
from kernel.scopes import DATA_READ
from kernel.users import acting_user
from records.rest.errors import RestReadOnly
from records.rest.execute import rest_read_encoded
from records.rest.parser import query_parse_parts

QUERY_PARAMETERS = [
    OpenApiParameter("select", str, description="Columns, optionally aliased: select=a,alias:b,*"),
    OpenApiParameter("order", str, description="order=a.desc.nullslast,b"),
    OpenApiParameter("limit", int),
    OpenApiParameter("offset", int),
]
# A row's columns are the resource's own (a record type's fields), so one path cannot list them.
ROWS = {"type": "array", "items": {"type": "object", "additionalProperties": {}}}
DESCRIPTION = (
    "Rows of a record type (or process_run, process_run_step) in PostgREST syntax, "
    "under row-level security. Filter with <column>=[not.]<op>.<value>, op one of eq, "
    "neq, gt, gte, lt, lte, like, ilike (* is the wildcard), is (null, true, false) and "
    'in (in.(a,b,"c,d")); filters AND. Embedding, casts, or=/and= and rpc/ are '
    "refused by name."
)


class RestReadView(APIView):
    """Read rows of a record type (or a registered resource) with PostgREST syntax, under RLS."""

    required_scopes = {"get": DATA_READ}

    @extend_schema(
        description=DESCRIPTION,
        parameters=QUERY_PARAMETERS,
        responses={
            200: OpenApiResponse(ROWS, description="An array of rows keyed by column name."),
            **error_responses(400, 401, 404, 413),
        },
    )
    def get(self, request: Request, resource: str) -> HttpResponse:
        query = query_parse_parts(path=resource, query_string=request.META.get("QUERY_STRING", ""))
        body = rest_read_encoded(user=acting_user(request), query=query)
        return HttpResponse(body, content_type="application/json")

    def http_method_not_allowed(self, request: HttpRequest, *args, **kwargs):
        raise RestReadOnly(
            f"/v1/rest is a read and answers GET only; {request.method} is refused. "
            "Write records through /v1/data",
            field=None,
        )

    def options(self, request: HttpRequest, *args, **kwargs):
        return self.http_method_not_allowed(request, *args, **kwargs)
