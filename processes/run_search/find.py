"""``GET /v1/processes/runs``: runs you can see, found by process, state, pending reason, time and
searchable input fields (``input.<field>=<value>``), newest first, a keyset page at a time.

An input filter must name a field the process declares searchable (``processId`` given), or that
some deployed process does (no ``processId``): anything else is 400 ``INVALID_FILTER`` naming the
parameter, never an unindexed scan. Several input filters must all hold.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import QueryDict

from extensions.models import ExtensionKind, ExtensionModule, ExtensionStatus
from kernel.filters import FilterInvalid, filter_apply
from processes.api.filters import RunSearchFilter
from processes.api.reads import RUNS_PAGE_OWN_PARAMETERS, RunsPage, runs_paged
from processes.models import ProcessRun
from processes.run_search.fields import searchable_fields
from processes.run_search.keys import runs_with_input
from processes.steering import runs_visible

INPUT_PREFIX = "input."


def runs_found(*, user: User, params: QueryDict) -> RunsPage:
    """The page of runs ``params`` asks for (see the module docstring)."""
    return runs_paged(runs_filtered(user=user, params=params), params)


def runs_filtered(
    *, user: User, params: QueryDict, also_known: tuple[str, ...] = RUNS_PAGE_OWN_PARAMETERS
) -> QuerySet[ProcessRun]:
    """The runs ``user`` can see that ``params`` names, unordered (``FilterInvalid`` names a
    parameter it cannot apply). ``also_known``: parameters the caller reads itself."""
    wanted = _input_filters(params)
    runs = filter_apply(
        RunSearchFilter,
        params=params,
        queryset=runs_visible(user),
        also_known=(*also_known, *(INPUT_PREFIX + name for name in wanted)),
    )
    if wanted:
        _searchable_check(wanted, params.get("processId") or None)
    return runs_with_input(runs, wanted)


def _input_filters(params: QueryDict) -> dict[str, str]:
    wanted: dict[str, str] = {}
    for name in params:
        if not name.startswith(INPUT_PREFIX):
            continue
        values = params.getlist(name)
        if len(values) != 1:
            raise FilterInvalid(f"{name}: give one value (a run's input holds one)", field=name)
        wanted[name[len(INPUT_PREFIX) :]] = values[0]
    return wanted


def _searchable_check(wanted: dict[str, str], process_id: str | None) -> None:
    modules = ExtensionModule.objects.filter(
        kind=ExtensionKind.PROCESS, status=ExtensionStatus.ACTIVE
    )
    if process_id is not None:
        modules = modules.filter(pk=process_id)
    declared: set[str] = set()
    for definition in modules.values_list("definition", flat=True):
        declared.update(searchable_fields(definition if isinstance(definition, dict) else {}))
    for name in wanted:
        if name not in declared:
            whose = process_id or "any deployed process"
            raise FilterInvalid(
                f"{INPUT_PREFIX}{name}: not a searchable input field of {whose} "
                '(declare it with "x-search": true on the input schema\'s property)',
                field=INPUT_PREFIX + name,
            )
