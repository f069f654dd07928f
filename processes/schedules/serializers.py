"""Shapes of the ``schedules`` part of a bundle, for the OpenAPI schema.

``schedules_parse`` parses the part (naming ``schedules[i].…`` at fault) and ``ScheduleChange``
renders what a plan or an apply changes; ``SchedulesPart`` hands these classes to the extensions
room, which documents the bundle body without importing this room.
"""

from __future__ import annotations

from rest_framework import serializers

from extensions.bundle_parts import PlanChange
from processes.schedules.models import ScheduleKind

SCHEDULE_CHANGES = tuple(change.value for change in PlanChange)


class ScheduleBodyIn(serializers.Serializer):
    """What the schedule does when it fires: invoke a process with an input."""

    kind = serializers.ChoiceField(choices=("process",))
    process = serializers.CharField(help_text="The id of a process the bundle leaves deployed.")
    input = serializers.DictField(
        required=False,
        help_text="Checked against the process's inputSchema at every firing; {} when left out.",
    )


class ScheduleEntryIn(serializers.Serializer):
    """One entry of ``schedules.json``."""

    name = serializers.CharField()
    scheduleKind = serializers.ChoiceField(choices=ScheduleKind.choices)
    scheduleExpr = serializers.CharField(help_text="A five-field cron expression.")
    scheduleTz = serializers.CharField(required=False, help_text="An IANA zone; UTC when left out.")
    body = ScheduleBodyIn()


class ScheduleChangeOut(serializers.Serializer):
    """What a deploy does (or would do) to one schedule."""

    name = serializers.CharField()
    change = serializers.ChoiceField(choices=SCHEDULE_CHANGES)
    process = serializers.CharField()
    cron = serializers.CharField()
    tz = serializers.CharField()
