"""``GET /v1/processes/runs``: runs you can see, found by what they are about."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from kernel.filters import filter_parameters
from kernel.openapi import error_responses
from kernel.scopes import DATA_READ
from kernel.users import acting_user
from processes import serializers as out
from processes.api.filters import RunSearchFilter
from processes.api.views import PAGE_PARAMETERS
from processes.run_search.find import runs_found


class RunSearchView(APIView):
    """Runs you can see (an administrator: every run), newest first, a keyset page at a time —
    ``next`` is the ``cursor`` of the following page, null on the last."""

    required_scopes = {"get": DATA_READ}

    @extend_schema(
        parameters=[
            *PAGE_PARAMETERS,
            *filter_parameters(RunSearchFilter),
            OpenApiParameter(
                "input.<field>",
                str,
                description=(
                    "Runs whose input field held this value (a field the process declares "
                    'searchable with "x-search": true; several must all hold). Replace <field> '
                    "with the field's name, e.g. input.customer=C-1."
                ),
            ),
        ],
        responses={200: out.RunsPageOut, **error_responses(400, 401)},
        operation_id="processes_runs_search",
    )
    def get(self, request: Request) -> Response:
        page = runs_found(user=acting_user(request), params=request.query_params)
        return Response(
            {
                "runs": [out.run_brief(run, page.failures.get(run.pk)) for run in page.runs],
                "next": page.next,
            }
        )
