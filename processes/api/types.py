"""``GET /v1/processes/types``: the declarations file a process author types against
(``processes.authoring_types``); ``turbobase ext types`` writes it beside the processes."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from extensions.typecheck import DECLARATIONS_NAME
from kernel.openapi import error_responses
from kernel.scopes import DATA_READ
from processes.authoring_types import authoring_declarations


class TypesOut(serializers.Serializer):
    fileName = serializers.CharField(help_text="Where it goes: beside the processes.")
    declarations = serializers.CharField(
        help_text="TypeScript declarations: the catalog's record types (fields, required, "
        "protected) and each deployed process's ctx.input and ctx.row."
    )


class ProcessTypesView(APIView):
    """The record types and the deployed processes as TypeScript declarations. The processes and
    the catalog are everyone's, so this reads as the process list does."""

    required_scopes = {"get": DATA_READ}

    @extend_schema(responses={200: TypesOut, **error_responses(401)})
    def get(self, request: Request) -> Response:
        origin = request.build_absolute_uri("/").rstrip("/")
        return Response(
            {"fileName": DECLARATIONS_NAME, "declarations": authoring_declarations(origin=origin)}
        )
