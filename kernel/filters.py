"""Query-string filters on the API's lists: django-filter, refusing in the error family.

A list view names a ``FilterSet`` (``records.held_deletes.filters``, ``processes.api.filters``)
and calls ``filter_apply``. What it adds to plain django-filter:

- a bad value is a 400 ``invalid_request`` whose rejection names the parameter
  (``INVALID_FILTER``), rendered by the one exception handler rather than DRF's ``{field: [..]}``;
- a parameter the list does not know is refused by name too, so a typo (``?stat=failed``) is
  never read as "no filter" and answered with everything.

Text nothing can store (NUL, a lone surrogate) never gets here: ``kernel.middleware`` refuses it
for every route before routing.

``filter_parameters`` turns the same ``FilterSet`` into the OpenAPI query parameters, so the
schema lists exactly what the view accepts.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any, TypeVar

import django_filters
from django.core.exceptions import ValidationError
from django.db.models import Model, QuerySet
from django.http import QueryDict
from django_filters.fields import IsoDateTimeField
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework.settings import api_settings

from kernel.codes import KernelCode
from kernel.errors import InvalidRequest

M = TypeVar("M", bound=Model)


class FilterInvalid(InvalidRequest):
    """A query parameter of a list is unknown, or its value is not one the list accepts."""

    code = KernelCode.INVALID_FILTER


class InstantField(IsoDateTimeField):
    """An ISO 8601 date or time that exists in UTC, where the database compares it.

    ``9999-12-31T23:59:59-10:00`` parses, but its UTC instant is past year 9999: converting it
    raised ``OverflowError`` (a 500). Converting here makes it an invalid value like any other.
    """

    def to_python(self, value: Any) -> datetime | None:
        try:
            parsed = super().to_python(value)
            return parsed.astimezone(UTC) if parsed is not None else None
        except OverflowError as exc:
            raise ValidationError(self.error_messages["invalid"], code="invalid") from exc


class InstantFilter(django_filters.IsoDateTimeFilter):
    """``IsoDateTimeFilter`` over ``InstantField``: every accepted value is a UTC instant."""

    field_class = InstantField


def _params_check(params: QueryDict, known: Collection[str]) -> None:
    for name in params:
        if name not in known:
            listed = ", ".join(sorted(set(known) - {api_settings.URL_FORMAT_OVERRIDE}))
            raise FilterInvalid(f"{name} is not a filter of this list ({listed})", field=name)


def filter_apply(
    filterset_class: type[django_filters.FilterSet],
    *,
    params: QueryDict,
    queryset: QuerySet[M],
    also_known: Collection[str] = (),
) -> QuerySet[M]:
    """``queryset`` narrowed by the query string, or ``FilterInvalid`` naming the parameter.

    ``also_known`` names parameters the view reads itself (``mode`` on the queue).
    """
    known = {*filterset_class.base_filters, *also_known, api_settings.URL_FORMAT_OVERRIDE}
    _params_check(params, known)
    filterset = filterset_class(data=params, queryset=queryset)
    if not filterset.is_valid():
        name, messages = next(iter(filterset.errors.items()))
        raise FilterInvalid(f"{name}: {' '.join(messages)}", field=name)
    return filterset.qs


def _parameter_type(filter_: django_filters.Filter) -> Any:
    if isinstance(filter_, django_filters.IsoDateTimeFilter):
        return OpenApiTypes.DATETIME
    if isinstance(filter_, django_filters.NumberFilter):
        return OpenApiTypes.INT
    return OpenApiTypes.STR


def filter_parameters(filterset_class: type[django_filters.FilterSet]) -> list[OpenApiParameter]:
    """The ``FilterSet``'s filters as OpenAPI query parameters (their ``help_text`` as description)."""
    parameters = []
    for name, filter_ in filterset_class.base_filters.items():
        choices = filter_.extra.get("choices")
        parameters.append(
            OpenApiParameter(
                name,
                _parameter_type(filter_),
                OpenApiParameter.QUERY,
                description=filter_.extra.get("help_text", ""),
                enum=[value for value, _ in choices] if choices else None,
                many=isinstance(filter_, django_filters.MultipleChoiceFilter) or None,
            )
        )
    return parameters
