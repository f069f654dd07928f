"""Connected sources in the admin: the sandbox's script (demos); the lanes, the pacing and the send
log (read-only)."""

from __future__ import annotations

from django.contrib import admin

from sources.models import SandboxScript, SandboxSend, SourceLane, SourcePace


@admin.register(SandboxScript)
class SandboxScriptAdmin(admin.ModelAdmin):
    list_display = (
        "record_type",
        "operation",
        "latency_ms",
        "refuse_code",
        "transient_failures",
        "never_answer",
        "settle_conflict",
        "updated_at",
    )


class _ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(SourceLane)
class SourceLaneAdmin(_ReadOnlyAdmin):
    list_display = ("record_type", "holder", "lease_until", "updated_at")


@admin.register(SourcePace)
class SourcePaceAdmin(_ReadOnlyAdmin):
    """Each source's backoff and next rate slot (its limits are instance settings)."""

    list_display = (
        "source",
        "paced_until",
        "backoffs",
        "last_reason",
        "next_slot_at",
        "updated_at",
    )


@admin.register(SandboxSend)
class SandboxSendAdmin(_ReadOnlyAdmin):
    list_display = (
        "id",
        "record_type",
        "operation",
        "write_state_id",
        "outcome",
        "external_id",
        "in_flight",
        "started_at",
        "finished_at",
        "worker_pid",
    )
    list_filter = ("record_type", "outcome")
