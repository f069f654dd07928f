"""Records, their outbound writes and the write trail, read-only in the admin.

Every record write goes through ``records.boundary``; the admin is a window onto the store, never
a second door, so nothing here can add, change or delete a row.
"""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from records.models import Record, RecordWriteState, WriteTrail


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Record)
class RecordAdmin(ReadOnlyAdmin):
    # Narrow enough for 1280 px: the page of one record has the rest.
    list_display = ("pg_row_id", "record_type", "external_id", "sync_state", "owner", "updated_at")
    list_filter = ("record_type", "sync_state", "source_system")
    search_fields = ("=pg_row_id", "external_id", "idempotency_key", "owner__username")
    date_hierarchy = "created_at"
    list_select_related = ("owner", "group")


@admin.register(RecordWriteState)
class RecordWriteStateAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "record_type",
        "operation",
        "status",
        "attempts",
        "reason_code",
        "updated_at",
    )
    list_filter = ("status", "operation", "record_type", "source_system")
    search_fields = ("=record__pg_row_id", "external_id", "reason_code")
    list_select_related = ("record",)


@admin.register(WriteTrail)
class WriteTrailAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "at",
        "actor_name",
        "action",
        "record_type",
        "outcome",
        "code",
        "process_step",
    )
    list_filter = ("outcome", "action", "record_type")
    search_fields = ("=pg_row_id", "code", "actor_name", "process_run_id")
    date_hierarchy = "at"


# Compliance → Guardrails: held deletes and rules register from here (they act through this room).
from records.held_deletes import admin as _held_deletes_admin  # noqa: E402,F401
