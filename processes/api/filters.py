"""The filters of ``GET /v1/processes/queue``, ``GET /v1/processes/<id>/runs`` and
``GET /v1/processes/runs`` (applied by
``kernel.filters.filter_apply``).

``state`` may be repeated (``?state=failed&state=rolled_back``). Date bounds are half-open —
``createdAfter`` is "at or after", ``createdBefore`` "strictly before" — so consecutive windows
never list a run twice. ``mode`` keeps its own parse (``processes.invoke.mode_parse``): the seed
names that parameter and its refusal. One process's runs takes the process from its path, so its
filters are the queue's less ``processId``.
"""

from __future__ import annotations

import django_filters

from kernel.filters import InstantFilter
from processes.models import PendingReason, ProcessRun, RunState

STATE = "state"


class ProcessRunsFilter(django_filters.FilterSet):
    state = django_filters.MultipleChoiceFilter(
        choices=RunState.choices,
        help_text="Only runs in these states (the queue's counts still cover every state).",
    )
    createdAfter = InstantFilter(
        field_name="created_at", lookup_expr="gte", help_text="ISO 8601; invoked at or after."
    )
    createdBefore = InstantFilter(
        field_name="created_at", lookup_expr="lt", help_text="ISO 8601; invoked strictly before."
    )

    class Meta:
        model = ProcessRun
        fields: list[str] = []  # every filter is declared above, under its camelCase name


class RunFilter(ProcessRunsFilter):
    processId = django_filters.CharFilter(
        field_name="process_id", help_text="One process's runs, e.g. acme:raise-po."
    )

    class Meta(ProcessRunsFilter.Meta):
        pass


class RunSearchFilter(RunFilter):
    """``GET /v1/processes/runs``: the queue's filters and the pending reason (the input fields
    are read by ``processes.run_search.find``)."""

    pendingReason = django_filters.MultipleChoiceFilter(
        field_name="pending_reason",
        choices=PendingReason.choices,
        help_text="Only runs waiting for these reasons (repeatable).",
    )

    class Meta(RunFilter.Meta):
        pass
