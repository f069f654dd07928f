"""The remove guard: a process a schedule still runs is not removed on its own."""

from __future__ import annotations

from typing import Any


def schedule_remove_guard(sender: Any = None, *, module_id: str, kind: str, **kwargs: Any) -> None:
    """``extension_removing`` receiver: refuse (409) while a schedule runs ``module_id``."""
    if kind != "process":
        return
    from processes.schedules.errors import ProcessScheduled
    from processes.schedules.models import ProcessSchedule

    names = list(
        ProcessSchedule.objects.filter(process_id=module_id)
        .order_by("name")
        .values_list("name", flat=True)
    )
    if names:
        raise ProcessScheduled(
            f"the schedule {names[0]!r} runs {module_id}; remove the schedule in the same deploy "
            "(turbobase ext deploy --to <env>) or point it at another process",
            field="id",
            id=module_id,
            schedules=names,
        )
