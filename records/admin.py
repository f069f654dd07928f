"""Records, their outbound writes and the write trail, read-only in the admin.

Every record write goes through ``records.boundary``; the admin is a window onto the store, never
a second door, so nothing here can add, change or delete a row.
"""

from __future__ import annotations

import contextlib
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse

from kernel.errors import NotFound
from kernel.ids import uuid_or_none
from records.lineage import LineageEntry, record_lineage
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
    change_form_template = "admin/records/record/change_form.html"

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """The record's page, with its lineage below its fields."""
        parsed = uuid_or_none(object_id)
        record = Record.reads.filter(pk=parsed).first() if parsed is not None else None
        lineage: list[LineageEntry] = []
        if record is not None and request.user.is_staff:
            with contextlib.suppress(NotFound):  # a type no longer in the catalog
                lineage = record_lineage(
                    user=request.user, record_type=record.record_type, pg_row_id=object_id
                )
        context = {**(extra_context or {}), "lineage": lineage}
        return super().change_view(request, object_id, form_url, extra_context=context)


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
