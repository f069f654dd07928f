"""``GET /v1/audit``: the audit trail (``kernel.audit``) for administrators, newest first.

Filterable by who (``actor``, a username), what (``action``, ``target``) and when (``after`` at
or after, ``before`` strictly before — half-open, so consecutive windows never count an event
twice), through ``kernel.filters`` so an unknown parameter or a bad value is refused by name.
``limit`` caps the page (default 100, at most 1000); the newest events come first.
"""

from __future__ import annotations

from typing import Any

import django_filters
from django.http import QueryDict
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from kernel.audit import AuditEvent
from kernel.filters import FilterInvalid, InstantFilter, filter_apply, filter_parameters
from kernel.openapi import error_responses
from kernel.scopes import DATA_READ
from kernel.users import admin_check

LIMIT_DEFAULT = 100
LIMIT_MAX = 1000


class AuditEventFilter(django_filters.FilterSet):
    actor = django_filters.CharFilter(field_name="actor_name", help_text="A username, e.g. root.")
    action = django_filters.CharFilter(help_text="e.g. setting.changed, process.switched_off.")
    target = django_filters.CharFilter(
        help_text="e.g. process:acme:sync, run:<runId>, a setting key."
    )
    after = InstantFilter(field_name="at", lookup_expr="gte", help_text="ISO 8601; at or after.")
    before = InstantFilter(
        field_name="at", lookup_expr="lt", help_text="ISO 8601; strictly before."
    )

    class Meta:
        model = AuditEvent
        fields: list[str] = []  # every filter is declared above


def _limit_parse(params: QueryDict) -> int:
    raw = params.get("limit")
    if raw is None:
        return LIMIT_DEFAULT
    if not raw.isdigit() or not 1 <= int(raw) <= LIMIT_MAX:
        raise FilterInvalid(f"limit must be a whole number from 1 to {LIMIT_MAX}", field="limit")
    return int(raw)


def audit_events_list(*, params: QueryDict) -> list[AuditEvent]:
    """The filtered events, newest first, at most ``limit`` of them."""
    limit = _limit_parse(params)
    rows = filter_apply(
        AuditEventFilter, params=params, queryset=AuditEvent.objects.all(), also_known=("limit",)
    )
    return list(rows.order_by("-at", "-id")[:limit])


class AuditEventOut(serializers.Serializer):
    id = serializers.IntegerField()
    at = serializers.DateTimeField()
    actor = serializers.CharField(allow_null=True, help_text="The username; null for the system.")
    action = serializers.CharField()
    target = serializers.CharField()
    before = serializers.JSONField(
        allow_null=True, help_text="The value before, where there was one."
    )
    after = serializers.JSONField(allow_null=True, help_text="The value after, where there is one.")
    reason = serializers.CharField(help_text="The operator's reason or note; may be empty.")


class AuditEventListOut(serializers.Serializer):
    events = AuditEventOut(many=True)


def audit_event_out(event: AuditEvent) -> dict[str, Any]:
    return {
        "id": event.pk,
        "at": event.at.isoformat(),
        "actor": event.actor_name or None,
        "action": event.action,
        "target": event.target,
        "before": event.before,
        "after": event.after,
        "reason": event.reason,
    }


LIMIT_PARAMETER = OpenApiParameter(
    "limit",
    OpenApiTypes.INT,
    OpenApiParameter.QUERY,
    description=f"At most this many events (default {LIMIT_DEFAULT}, at most {LIMIT_MAX}).",
)


class AuditEventListView(APIView):
    """Operator actions, newest first: switches, settings, held-delete decisions, steering, schedules."""

    required_scopes = {"get": DATA_READ}

    @extend_schema(
        parameters=[*filter_parameters(AuditEventFilter), LIMIT_PARAMETER],
        responses={200: AuditEventListOut, **error_responses(400, 401, 403)},
    )
    def get(self, request: Request) -> Response:
        admin_check(request, "only an administrator may read the audit trail")
        events = audit_events_list(params=request.query_params)
        return Response({"events": [audit_event_out(e) for e in events]})
