"""Processes → Schedules: what is scheduled, when it fires next, and every firing.

Schedules are deployed (``turbobase ext deploy --to <env>``), never edited here: the screen is
read-only except for resuming a schedule that paused itself after five failures in a row.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from processes.schedules.models import ProcessSchedule, ProcessScheduleFiring


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(ProcessSchedule)
class ProcessScheduleAdmin(ReadOnlyAdmin):
    list_display = (
        "name",
        "process_id",
        "schedule_expr",
        "schedule_tz",
        "state",
        "next_fire_at",
        "last_fired_at",
        "consecutive_failures",
    )
    list_filter = ("is_paused", "schedule_tz")
    search_fields = ("name", "process_id")
    readonly_fields = (
        "name",
        "schedule_kind",
        "schedule_expr",
        "schedule_tz",
        "process_id",
        "body",
        "state",
        "next_fire_at",
        "last_fired_at",
        "consecutive_failures",
        "paused_reason",
        "deployed_by",
        "created_at",
        "updated_at",
    )

    @admin.display(description="state", ordering="is_paused")
    def state(self, schedule: ProcessSchedule) -> str:
        # Words, not Django's boolean icons: a green tick beside "paused?" read as "all is well".
        if schedule.is_paused:
            return format_html(
                '<strong class="schedule-paused" title="{}">paused</strong>', schedule.paused_reason
            )
        return mark_safe(
            '<span class="schedule-active">active</span>'
        )  # a constant, nothing to escape

    actions = ("resume",)

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return bool(request.user.is_staff)

    @admin.action(description="Resume selected paused schedules")
    def resume(self, request: HttpRequest, queryset: QuerySet[ProcessSchedule]) -> None:
        from processes.schedules.firing import schedule_resume  # the invoke path; not at load time

        now = timezone.now()
        resumed = sum(schedule_resume(name=s.name, now=now, by=request.user) for s in queryset)
        self.message_user(request, f"{resumed} schedule(s) resumed", messages.SUCCESS)


@admin.register(ProcessScheduleFiring)
class ProcessScheduleFiringAdmin(ReadOnlyAdmin):
    list_display = ("schedule_name", "due_at", "fired_at", "outcome", "run_id", "field", "message")
    list_filter = ("outcome",)
    search_fields = ("schedule_name", "=run_id")
    date_hierarchy = "due_at"

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return bool(request.user.is_staff)
