"""Processes → Events: every kept event, read-only — what came, from whom, the runs it started and
how many waits it resumed — and, per event, the waits it resumed (each linked to its run)."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from processes.events.models import Event, EventWait, WaitState


def _run_link(run_id: object) -> str:
    url = reverse("admin:processes_processrun_change", args=[run_id])
    return format_html('<a href="{}">{}</a>', url, str(run_id)[:8])


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ("name", "sender", "key", "received_at", "resumed", "runs_started")
    list_filter = ("name",)
    search_fields = ("name", "key", "=event_id")
    list_select_related = ("sender",)
    ordering = ("-received_at",)
    fields = (
        "event_id",
        "name",
        "sender",
        "key",
        "received_at",
        "delivered_at",
        "data",
        "runs_started",
        "resumed",
        "waits_resumed",
    )
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # sent with POST /v1/events or turbobase events send

    def has_change_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        return False  # kept as it came

    def has_delete_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        return False  # the runs it started and resumed name it

    @admin.display(description="runs started")
    def runs_started(self, event: Event) -> str:
        if not event.run_ids:
            return "—"
        return format_html_join(", ", "{}", ((_run_link(run_id),) for run_id in event.run_ids))

    @admin.display(description="waits resumed")
    def waits_resumed(self, event: Event) -> str:
        waits = EventWait.objects.filter(event=event, state=WaitState.RECEIVED).order_by("pk")
        if not waits:
            return "—"
        return format_html_join(
            ", ", "{} ({})", ((_run_link(w.run_id), w.step_id) for w in waits[:200])
        )
