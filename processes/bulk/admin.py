"""Processes → Bulk actions: every bulk action over runs, its progress, and approve / reject for
the ones awaiting another administrator (the requester's own is refused: four eyes)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse

from kernel.errors import TurbobaseError
from kernel.users import acting_user
from processes.bulk.models import BulkAction, BulkState
from processes.bulk.service import bulk_decide


@admin.register(BulkAction)
class BulkActionAdmin(admin.ModelAdmin):
    list_display = (
        "bulk_id",
        "action",
        "count",
        "status",
        "requested_by",
        "approved_by",
        "runs_done",
        "runs_skipped",
        "runs_failed",
        "created_at",
    )
    list_filter = ("status", "action")
    ordering = ("-created_at",)
    list_select_related = ("requested_by", "approved_by")
    readonly_fields = [field.name for field in BulkAction._meta.fields]
    actions = ("approve", "reject")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: BulkAction | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: BulkAction | None = None) -> bool:
        return False

    def _decide(
        self, request: HttpRequest, chosen: QuerySet[BulkAction], approve: bool, reason: str = ""
    ) -> None:
        user = acting_user(request)
        decided = 0
        for bulk in chosen.filter(status=BulkState.AWAITING_APPROVAL):
            try:
                bulk_decide(user=user, bulk_id=str(bulk.pk), approve=approve, reason=reason)
                decided += 1
            except TurbobaseError as exc:
                self.message_user(request, f"{bulk.pk}: {exc.message}", messages.ERROR)
        verb = "approved" if approve else "rejected"
        self.message_user(request, f"{decided} bulk action(s) {verb}", messages.SUCCESS)

    @admin.action(description="Approve the selected bulk actions (another administrator's)")
    def approve(self, request: HttpRequest, chosen: QuerySet[BulkAction]) -> None:
        self._decide(request, chosen, approve=True)

    @admin.action(description="Reject the selected bulk actions (another administrator's)…")
    def reject(self, request: HttpRequest, chosen: QuerySet[BulkAction]) -> TemplateResponse | None:
        """Asks why first (a page with the reason), then rejects with it, as the API's /reject."""
        reason = request.POST.get("reason", "").strip()
        if "apply" in request.POST and reason:
            self._decide(request, chosen, approve=False, reason=reason)
            return None
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "chosen": list(chosen),
            "reason": reason,
            "error": "Say why it is rejected." if "apply" in request.POST else "",
            "title": "Reject bulk actions",
        }
        return TemplateResponse(request, "admin/processes/bulkaction/reject_reason.html", context)
