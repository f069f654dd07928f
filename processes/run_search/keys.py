"""The search keys a run keeps, written with the run (``processes.invoke``), and runs found by
them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet

from processes.run_search.fields import search_value, searchable_fields
from processes.run_search.models import RunSearchKey

if TYPE_CHECKING:
    from processes.models import ProcessRun


def search_keys_write(run: Any, definition: dict[str, Any], body: Any) -> None:
    """Keep the searchable values of ``body``, ``run``'s input (one INSERT; none declared: none)."""
    names = searchable_fields(definition)
    if not names or not isinstance(body, dict):
        return
    keys = [
        RunSearchKey(
            run_id=run.pk,
            process_id=run.process_id,
            field=name,
            value=value,
        )
        for name in names
        if (value := search_value(body.get(name))) is not None
    ]
    if keys:
        RunSearchKey.objects.bulk_create(keys)


def runs_with_input(runs: QuerySet[ProcessRun], wanted: dict[str, str]) -> QuerySet[ProcessRun]:
    """``runs`` whose input held each of ``wanted``'s values (by their search keys)."""
    for name, raw in wanted.items():
        keys = RunSearchKey.objects.filter(field=name, value=search_value(raw))
        runs = runs.filter(pk__in=keys.values("run_id"))
    return runs
