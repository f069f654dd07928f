"""The filters of ``GET /v1/guardrails/held-deletes`` (applied by ``kernel.filters.filter_apply``).

Date bounds are half-open — ``requestedAfter`` is "at or after", ``requestedBefore`` is "strictly
before" — so consecutive windows (``…After=10:00&…Before=11:00``, then 11:00–12:00) never count a
hold twice.
"""

from __future__ import annotations

import django_filters
from django.http import QueryDict

from guardrails.models import HeldDelete, HeldStatus
from kernel.filters import InstantFilter, filter_apply


class HeldDeleteFilter(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(
        choices=HeldStatus.choices, help_text="pending, approved or rejected."
    )
    recordType = django_filters.CharFilter(field_name="record_type", help_text="e.g. customer.")
    processRunId = django_filters.CharFilter(
        field_name="process_run_id", help_text="Holds asked for by one run's steps."
    )
    requestedAfter = InstantFilter(
        field_name="requested_at", lookup_expr="gte", help_text="ISO 8601; at or after."
    )
    requestedBefore = InstantFilter(
        field_name="requested_at", lookup_expr="lt", help_text="ISO 8601; strictly before."
    )

    class Meta:
        model = HeldDelete
        fields: list[str] = []  # every filter is declared above, under its camelCase name


def held_deletes_list(*, params: QueryDict) -> list[HeldDelete]:
    """The filtered holds: pending first (oldest first), then decided ones (newest first)."""
    rows = filter_apply(
        HeldDeleteFilter,
        params=params,
        queryset=HeldDelete.objects.select_related("requested_by", "decided_by"),
    )
    pending = rows.filter(status=HeldStatus.PENDING).order_by("requested_at", "id")
    decided = rows.exclude(status=HeldStatus.PENDING).order_by("-decided_at", "-id")
    return [*pending, *decided]
