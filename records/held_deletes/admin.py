"""Compliance → Guardrails: held deletes to approve or reject, and the rules that decide writes.

Registered from ``records.admin``: the models are guardrails', the screens act through the records
door and validate against the records catalog, which guardrails may not import.

Approval and rejection go through ``records.verdicts.held_delete_decide`` — the same service the
API calls, which keeps the decision, its note and the audit event in one transaction — so the admin
never edits a held delete or its record by hand. Every decision takes a reason, on a small
confirmation page (one hold: its Approve / Reject buttons; many: the list's actions). The page of
one hold is read-only: nothing on it is saved, it is decided.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.exceptions import PermissionDenied
from django.db.models import Case, IntegerField, QuerySet, Value, When
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from guardrails.models import Guardrail, GuardrailRule, HeldDelete, HeldStatus
from kernel.users import acting_user
from records.catalog import catalog_load
from records.models import Record
from records.verdicts import HeldDeleteNotPending, held_delete_decide

VERDICTS = {"approve": True, "reject": False}
DONE = {"approve": "approved", "reject": "rejected"}


class DecisionForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        max_length=2000,
        strip=True,
        help_text="Kept with the decision and in the audit trail.",
        error_messages={
            "required": "Give a reason: it is kept with the decision and in the audit trail."
        },
    )


def _run_url(run_id: str) -> str:
    return reverse("admin:processes_processrun_change", args=[run_id])


@admin.register(Guardrail)
class GuardrailAdmin(admin.ModelAdmin):
    # Narrow on purpose: the list fits 1280 px; the page of one hold has everything else.
    list_display = (
        "id",
        "status",
        "record_type",
        "record_link",
        "requested_by",
        "requested_at",
        "run_link",
        "decide_buttons",
    )
    list_display_links = ("id",)
    list_filter = ("status", "record_type", "source_system")
    search_fields = ("external_id", "pg_row_id", "requested_by__username", "process_run_id")
    fields = (
        "status",
        "record_type",
        "record_link",
        "source_system",
        "record_fields",
        "requested_by",
        "requested_at",
        "run_link",
        "step_link",
        "decided_by",
        "decided_at",
        "note",
    )
    readonly_fields = fields
    # Pending first: they are the ones an operator is here for.
    ordering = (
        Case(
            When(status=HeldStatus.PENDING, then=Value(0)),
            default=Value(1),
            output_field=IntegerField(),
        ).asc(),
        "requested_at",
        "id",
    )
    actions = ("approve_selected", "reject_selected")
    list_select_related = ("requested_by", "decided_by")
    change_form_template = "admin/held_deletes/change_form.html"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a hold is made by the write boundary, never by hand

    def has_delete_permission(self, request: HttpRequest, obj: Guardrail | None = None) -> bool:
        return False  # the hold is evidence; it is decided, not removed

    def has_change_permission(self, request: HttpRequest, obj: Guardrail | None = None) -> bool:
        # The page of one hold has nothing to save (no SAVE button); deciding needs the change right.
        return obj is None and self.may_decide(request)

    def may_decide(self, request: HttpRequest) -> bool:
        return super().has_change_permission(request)

    # --- what the list and the page show ------------------------------------------------------

    @admin.display(description="record")
    def record_link(self, held: HeldDelete) -> str:
        url = reverse("admin:records_record_change", args=[held.pg_row_id])
        return format_html('<a href="{}">{}</a>', url, held.external_id or str(held.pg_row_id)[:8])

    @admin.display(description="run")
    def run_link(self, held: HeldDelete) -> str:
        if not held.process_run_id:
            return "-"
        return format_html(
            '<a href="{}">{}</a>', _run_url(held.process_run_id), held.process_run_id[:8]
        )

    @admin.display(description="step")
    def step_link(self, held: HeldDelete) -> str:
        if not (held.process_run_id and held.process_step):
            return held.process_step or "-"
        # The run page's ledger, where the step's rows are.
        return format_html(
            '<a href="{}#ledger">{}</a>', _run_url(held.process_run_id), held.process_step
        )

    @admin.display(description="the record as it was")
    def record_fields(self, held: HeldDelete) -> str:
        record = Record.reads.filter(pk=held.pg_row_id).first()
        if record is None:
            return "the record no longer exists"
        rows = format_html_join(
            "",
            "<tr><th>{}</th><td>{}</td></tr>",
            ((name, _shown(value)) for name, value in record.fields.items()),
        )
        lines = f"{len(record.lines)} line(s)" if record.lines else "no lines"
        return format_html(
            '<table class="held-record">{}</table><p>{}; sync version {}, {}</p>',
            rows,
            lines,
            record.sync_version,
            record.sync_state,
        )

    @admin.display(description="decide")
    def decide_buttons(self, held: HeldDelete) -> str:
        if held.status != HeldStatus.PENDING:
            return held.decided_by.get_username() if held.decided_by else "-"
        return format_html(
            '<a class="button" href="{}">Approve</a> <a class="button" href="{}">Reject</a>',
            self._decide_url(held.pk, "approve"),
            self._decide_url(held.pk, "reject"),
        )

    def _decide_url(self, held_id: int, verdict: str) -> str:
        return reverse("admin:guardrails_guardrail_decide", args=[held_id, verdict])

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict | None = None,
    ) -> HttpResponse:
        held = HeldDelete.objects.filter(pk=object_id).first() if object_id.isdigit() else None
        is_open = (
            held is not None and held.status == HeldStatus.PENDING and self.may_decide(request)
        )
        decide_urls = (
            {v: self._decide_url(held.pk, v) for v in VERDICTS} if held and is_open else None
        )
        context = {"decide_urls": decide_urls, **(extra_context or {})}
        return super().change_view(request, object_id, form_url, extra_context=context)

    # --- one decision ---------------------------------------------------------------------------

    def get_urls(self) -> list:
        decide = path(
            "<int:held_id>/decide/<str:verdict>/",
            self.admin_site.admin_view(self.decide_view),
            name="guardrails_guardrail_decide",
        )
        return [decide, *super().get_urls()]

    def decide_view(self, request: HttpRequest, held_id: int, verdict: str) -> HttpResponse:
        """GET: the hold and a reason box; POST ``reason``: decide it through the one service."""
        if verdict not in VERDICTS:
            raise Http404(f"{verdict!r} is not a decision")
        if not self.may_decide(request):
            raise PermissionDenied
        held = HeldDelete.objects.select_related("requested_by").filter(pk=held_id).first()
        if held is None:
            raise Http404(f"no held delete #{held_id}")
        page = reverse("admin:guardrails_guardrail_change", args=[held.pk])
        form = DecisionForm(request.POST if request.method == "POST" else None)
        if held.status != HeldStatus.PENDING:
            self.message_user(
                request, f"held delete #{held.pk} is already {held.status}", messages.WARNING
            )
            return HttpResponseRedirect(page)
        if request.method == "POST" and form.is_valid():
            try:
                held_delete_decide(
                    held_id=held.pk,
                    approve=VERDICTS[verdict],
                    by=acting_user(request),
                    note=form.cleaned_data["reason"],
                )
            except HeldDeleteNotPending as exc:  # decided by someone else since the page was shown
                self.message_user(request, exc.message, messages.WARNING)
                return HttpResponseRedirect(page)
            self.message_user(request, f"held delete #{held.pk} {DONE[verdict]}", messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:guardrails_guardrail_changelist"))
        return self._decision_page(
            request, verdict=verdict, form=form, held=[held], cancel_url=page
        )

    def _decision_page(
        self,
        request: HttpRequest,
        *,
        verdict: str,
        form: DecisionForm,
        cancel_url: str,
        held: list[HeldDelete] | None = None,
        counts: dict[str, int] | None = None,
        hidden: Sequence[tuple[str, str]] = (),
    ) -> HttpResponse:
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"{verdict.capitalize()} held deletes"
            if counts
            else f"{verdict.capitalize()} held delete",
            "verdict": verdict,
            "what_it_does": (
                "the delete is sent to the source system"
                if VERDICTS[verdict]
                else "the record comes back as it was"
            ),
            "form": form,
            "held": [(h, self.record_fields(h)) for h in held or ()],
            "counts": counts,
            "hidden": hidden,
            "cancel_url": cancel_url,
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, "admin/held_deletes/decide.html", context)

    # --- many decisions -------------------------------------------------------------------------

    def _decide_many(
        self, request: HttpRequest, queryset: QuerySet[Guardrail], *, verdict: str
    ) -> Any:
        form = DecisionForm(request.POST if request.POST.get("confirm") == "yes" else None)
        if not form.is_valid():
            return self._confirm_many(request, queryset, verdict=verdict, form=form)
        total, decided = queryset.count(), 0  # counted first: deciding changes a filtered list
        pending = (
            queryset.filter(status=HeldStatus.PENDING).order_by("id").values_list("pk", flat=True)
        )
        for held_id in pending.iterator():
            try:
                held_delete_decide(
                    held_id=held_id,
                    approve=VERDICTS[verdict],
                    by=acting_user(request),
                    note=form.cleaned_data["reason"],
                )
            except (
                HeldDeleteNotPending
            ):  # decided by someone else meanwhile: counted as already decided
                continue
            decided += 1
        level = messages.SUCCESS if decided else messages.WARNING
        self.message_user(
            request, f"{decided} {DONE[verdict]}, {total - decided} already decided", level
        )
        return None

    def _confirm_many(
        self,
        request: HttpRequest,
        queryset: QuerySet[Guardrail],
        *,
        verdict: str,
        form: DecisionForm,
    ) -> HttpResponse:
        select_across = request.POST.get("select_across") == "1"
        hidden = [
            ("action", request.POST.get("action", "")),
            ("select_across", "1" if select_across else "0"),
            ("index", request.POST.get("index", "0")),
            ("confirm", "yes"),
        ]
        if not select_across:  # "select all N" carries the list's filters instead of N ids
            hidden += [
                (ACTION_CHECKBOX_NAME, str(pk)) for pk in queryset.values_list("pk", flat=True)
            ]
        pending = queryset.filter(status=HeldStatus.PENDING).count()
        counts = {"pending": pending, "decided": queryset.count() - pending}
        return self._decision_page(
            request,
            verdict=verdict,
            form=form,
            counts=counts,
            hidden=hidden,
            cancel_url=request.get_full_path(),
        )

    @admin.action(
        description="Approve selected held deletes (send the delete)", permissions=["change"]
    )
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[Guardrail]) -> Any:
        return self._decide_many(request, queryset, verdict="approve")

    @admin.action(
        description="Reject selected held deletes (bring the records back)", permissions=["change"]
    )
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[Guardrail]) -> Any:
        return self._decide_many(request, queryset, verdict="reject")


def _shown(value: Any) -> str:
    return "" if value is None else str(value)


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
