"""``/v1/sources``: the connected sources, their pacing and their backlog (administrators)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from kernel.errors import Forbidden
from kernel.openapi import error_responses
from kernel.scopes import DATA_READ, EXTENSIONS_DEPLOY
from sources.overview import sources_overview


class SourcesForbidden(Forbidden):
    """Only an administrator reads the connected sources' pacing and backlog (``forbidden``)."""


class SourceOut(serializers.Serializer):
    """One connected source: its limits (null: none), what is in flight and waiting, its backoff."""

    name = serializers.CharField()
    maxPerSecond = serializers.IntegerField(allow_null=True)
    maxInFlight = serializers.IntegerField(allow_null=True)
    inFlight = serializers.IntegerField()
    backlog = serializers.IntegerField()
    oldestBacklogAgeS = serializers.FloatField(allow_null=True)
    backingOff = serializers.BooleanField()
    pacedUntil = serializers.DateTimeField(allow_null=True)


class SourcesOut(serializers.Serializer):
    sources = SourceOut(many=True)


class SourcesView(APIView):
    """``GET`` lists every connected source with its pacing, like ``GET /v1/settings`` (whose
    ``sources.<name>.*`` keys set the limits)."""

    required_scopes = {"get": (DATA_READ, EXTENSIONS_DEPLOY)}

    @extend_schema(responses={200: SourcesOut, **error_responses(401, 403)})
    def get(self, request: Request) -> Response:
        if not getattr(request.user, "is_staff", False):
            raise SourcesForbidden()
        return Response({"sources": sources_overview()})
