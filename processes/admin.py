"""The Processes screen: every process with its switch and its last runs; runs and their ledger.

The instance-wide switch (``processes.enabled``) sits on the same screen, above the list, so an
operator who came to stop one process finds the one that stops them all. Runs are read-only: a
run is steered through the API (cancel, roll back, resume), never edited.
"""
from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from extensions.models import ExtensionKind, ExtensionModule, ExtensionStatus
from guardrails.settings import setting_get, setting_set
from kernel.audit import audit_record
from processes import run_admin  # noqa: F401  (registers the run page)
from processes.api.reads import LAST_RUNS, process_trigger
from processes.audit import ProcessAuditAction
from processes.models import Process, ProcessRun


def _runs_url(**filters: str) -> str:
    return reverse("admin:processes_processrun_changelist") + "?" + urlencode(filters)


@admin.register(Process)
class ProcessAdmin(admin.ModelAdmin):
    list_display = ("id", "is_enabled", "disabled_reason", "deployed", "trigger", "is_migration", "last_runs")
    list_editable = ("is_enabled", "disabled_reason")
    list_filter = ("is_enabled", "is_migration")
    search_fields = ("id", "description")
    fields = ("id", "description", "is_enabled", "disabled_reason", "is_migration", "trigger", "last_runs")
    readonly_fields = ("id", "description", "is_migration", "trigger", "last_runs")
    actions = ("switch_off", "switch_on")
    change_list_template = "admin/processes/process/change_list.html"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a process exists because it was deployed

    def has_delete_permission(self, request: HttpRequest, obj: Process | None = None) -> bool:
        return False  # remove the extension instead; the switch and the runs stay readable

    @admin.display(description="deployed", boolean=True)
    def deployed(self, obj: Process) -> bool:
        return ExtensionModule.objects.filter(
            pk=obj.pk, kind=ExtensionKind.PROCESS, status=ExtensionStatus.ACTIVE).exists()

    @admin.display(description="trigger")
    def trigger(self, obj: Process) -> str:
        trigger = process_trigger(obj.pk)
        if trigger.get("kind") == "schedule":
            return f"schedule {trigger.get('cron')} ({trigger.get('timezone')})"
        return str(trigger.get("kind"))

    @admin.display(description=f"last {LAST_RUNS} runs")
    def last_runs(self, obj: Process) -> str:
        runs = ProcessRun.objects.filter(process_id=obj.pk).order_by("-created_at", "-pk")[:LAST_RUNS]
        links = format_html_join(
            " ", '<a href="{}" title="{}">{}</a>',
            ((reverse("admin:processes_processrun_change", args=[run.pk]), run.reason or "", run.state)
             for run in runs),
        )
        every = format_html('<a href="{}">all runs</a>', _runs_url(process_id=obj.pk))
        return format_html("{} {}", links, every) if runs else format_html("none yet · {}", every)

    def save_model(self, request: HttpRequest, obj: Process, form, change: bool) -> None:
        # The change page and the list's editable switch both save here: audit a switch either way.
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            if "is_enabled" in form.changed_data:
                action = (ProcessAuditAction.PROCESS_SWITCHED_ON if obj.is_enabled
                          else ProcessAuditAction.PROCESS_SWITCHED_OFF)
                audit_record(actor=request.user, action=action, target=f"process:{obj.pk}",
                             after={"isEnabled": obj.is_enabled}, reason=obj.disabled_reason)

    @admin.action(description="Switch selected processes off", permissions=["change"])
    def switch_off(self, request: HttpRequest, queryset: QuerySet[Process]) -> None:
        reason = f"switched off by {request.user.get_username()}"
        count = 0
        with transaction.atomic():
            for process in queryset.select_for_update():
                process.is_enabled, process.disabled_reason = False, process.disabled_reason or reason
                process.save(update_fields=["is_enabled", "disabled_reason", "updated_at"])
                audit_record(actor=request.user, action=ProcessAuditAction.PROCESS_SWITCHED_OFF,
                             target=f"process:{process.pk}", after={"isEnabled": False},
                             reason=process.disabled_reason)
                count += 1
        self.message_user(request, f"{count} process(es) switched off", messages.SUCCESS)

    @admin.action(description="Switch selected processes on", permissions=["change"])
    def switch_on(self, request: HttpRequest, queryset: QuerySet[Process]) -> None:
        with transaction.atomic():
            count = 0
            for process in queryset.select_for_update():
                audit_record(actor=request.user, action=ProcessAuditAction.PROCESS_SWITCHED_ON,
                             target=f"process:{process.pk}", before={"isEnabled": process.is_enabled,
                                                                     "disabledReason": process.disabled_reason},
                             after={"isEnabled": True})
                count += 1
            queryset.update(is_enabled=True, disabled_reason="")
        self.message_user(request, f"{count} process(es) switched on", messages.SUCCESS)

    def get_urls(self):
        switch = path("instance-switch/", self.admin_site.admin_view(self.instance_switch_view),
                      name="processes_process_instance_switch")
        return [switch, *super().get_urls()]

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        context = {"is_instance_on": bool(setting_get("processes.enabled")),
                   "can_switch_instance": self.has_change_permission(request), **(extra_context or {})}
        return super().changelist_view(request, extra_context=context)

    def instance_switch_view(self, request: HttpRequest) -> HttpResponse:
        """POST ``enabled=1|0``: every process on the instance on or off (``processes.enabled``)."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_change_permission(request):
            raise PermissionDenied
        is_on = request.POST.get("enabled") == "1"
        with transaction.atomic():
            setting_set("processes.enabled", 1 if is_on else 0, by=request.user)
            audit_record(actor=request.user, target="processes.enabled", reason=request.POST.get("reason", ""),
                         action=ProcessAuditAction.ALL_SWITCHED_ON if is_on else ProcessAuditAction.ALL_SWITCHED_OFF)
        self.message_user(request, "every process is switched on" if is_on else (
            "every process on the instance is switched off: invokes answer 409 and running runs stop "
            "at their next step"), messages.SUCCESS if is_on else messages.WARNING)
        return HttpResponseRedirect(reverse("admin:processes_process_changelist"))


