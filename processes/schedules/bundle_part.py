"""The ``schedules`` key of a bundle body: ``turbobase/schedules.json``, deployed with the bundle."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any

from processes.schedules.serializers import ScheduleChangeOut, ScheduleEntryIn
from processes.schedules.service import (
    ScheduleSpec,
    schedules_apply,
    schedules_check,
    schedules_diff,
    schedules_parse,
)


class SchedulesPart:
    """Registered with ``extensions.bundle_parts`` at start-up (see ``schedules/models.py``)."""

    key = "schedules"
    # How /api/schema documents this part of the bundle body and of the plan and apply answers.
    request_serializer = ScheduleEntryIn
    change_serializer = ScheduleChangeOut

    def parse(self, raw: Any) -> list[ScheduleSpec]:
        return schedules_parse(raw)

    def check(
        self,
        parsed: list[ScheduleSpec] | None,
        *,
        modules_after: Mapping[str, str],
        removing: Collection[str],
        by: Any,
    ) -> None:
        processes = {module_id for module_id, kind in modules_after.items() if kind == "process"}
        schedules_check(specs=parsed, processes_after=processes, removing=removing, by=by)

    def diff(self, parsed: list[ScheduleSpec] | None) -> list[dict[str, Any]]:
        return [change.as_dict() for change in schedules_diff(parsed)]

    def apply(self, parsed: list[ScheduleSpec], *, by: Any, now: datetime) -> list[dict[str, Any]]:
        return [change.as_dict() for change in schedules_apply(specs=parsed, by=by, now=now)]
