"""Compliance → Guardrails: held deletes to approve or reject, and the rules that decide writes.

Registered from ``records.admin``: the models are guardrails', the screens act through the records
door and validate against the records catalog, which guardrails may not import.

Approval and rejection go through ``records.verdicts.held_delete_decide`` — the same service the
API calls — so the admin never edits a held delete or its record by hand.
"""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db.models import Case, IntegerField, QuerySet, Value, When
from django.http import HttpRequest

from guardrails.models import Guardrail, GuardrailRule, HeldStatus
from kernel.errors import TurbobaseError
from kernel.users import acting_user
from records.catalog import catalog_load
from records.verdicts import held_delete_decide


@admin.register(Guardrail)
class GuardrailAdmin(admin.ModelAdmin):
    list_display = ("id", "status", "record_type", "external_id", "pg_row_id", "source_system",
                    "requested_by", "requested_at", "process_run_id", "process_step", "decided_by",
                    "decided_at")
    list_display_links = ("id",)
    list_filter = ("status", "record_type", "source_system")
    search_fields = ("external_id", "pg_row_id", "requested_by__username", "process_run_id")
    readonly_fields = [f.name for f in Guardrail._meta.fields]
    # Pending first: they are the ones an operator is here for.
    ordering = (
        Case(When(status=HeldStatus.PENDING, then=Value(0)), default=Value(1),
             output_field=IntegerField()).asc(),
        "requested_at", "id",
    )
    actions = ("approve_selected", "reject_selected")

    list_select_related = ("requested_by", "decided_by")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a hold is made by the write boundary, never by hand

    def has_delete_permission(self, request: HttpRequest, obj: Guardrail | None = None) -> bool:
        return False  # the hold is evidence; it is decided, not removed

    def _decide(self, request: HttpRequest, queryset: QuerySet[Guardrail], *, approve: bool) -> None:
        decided, skipped = 0, []
        for held in queryset.order_by("id"):
            try:
                held_delete_decide(held_id=held.pk, approve=approve, by=acting_user(request))
            except TurbobaseError as exc:  # already decided by someone else meanwhile
                skipped.append(f"#{held.pk}: {exc.message}")
            else:
                decided += 1
        verb = "approved" if approve else "rejected"
        if decided:
            self.message_user(request, f"{decided} held delete(s) {verb}", messages.SUCCESS)
        if skipped:
            self.message_user(request, "not decided: " + "; ".join(skipped), messages.WARNING)

    @admin.action(description="Approve selected held deletes (send the delete)", permissions=["change"])
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[Guardrail]) -> None:
        self._decide(request, queryset, approve=True)

    @admin.action(description="Reject selected held deletes (bring the records back)", permissions=["change"])
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[Guardrail]) -> None:
        self._decide(request, queryset, approve=False)


class GuardrailRuleForm(forms.ModelForm):
    class Meta:
        model = GuardrailRule
        fields = ("record_type", "action", "decision")

    def clean_record_type(self) -> str:
        name = self.cleaned_data["record_type"]
        if name not in catalog_load():
            raise forms.ValidationError(f"{name!r} is not a record type in the catalog")
        return name


@admin.register(GuardrailRule)
class GuardrailRuleAdmin(admin.ModelAdmin):
    form = GuardrailRuleForm
    list_display = ("__str__", "record_type", "action", "decision", "updated_at")
    list_filter = ("action", "decision")
    search_fields = ("record_type",)
    ordering = ("record_type", "action")
