"""The Processes screen: every process with its switch, its triggers and its last runs.

The instance-wide switch (``processes.enabled``) sits on the same screen, above the list, so an
operator who came to stop one process finds the one that stops them all; it, and switching
processes off, go through a confirmation page that asks why. The run page is ``run_admin``.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get, setting_set
from kernel.audit import audit_record
from processes import run_admin  # noqa: F401  (registers the run page)
from processes.api.reads import LAST_RUNS
from processes.audit import ProcessAuditAction
from processes.models import Process, ProcessRun
from processes.plan_admin import plan_view
from processes.process_rows import ProcessRow, process_rows_load
from processes.status import RunMove, states_from
from processes.triggers.shape import EventTrigger, RecordTrigger


def _runs_url(**filters: str) -> str:
    return reverse("admin:processes_processrun_changelist") + "?" + urlencode(filters)


class ProcessSwitchForm(forms.ModelForm):
    """The list's editable switch: a process switched off says why (invokes are refused with it)."""

    class Meta:
        model = Process
        fields = ("is_enabled", "disabled_reason")

    def clean(self) -> dict:
        data = super().clean() or {}
        if not data.get("is_enabled") and not (data.get("disabled_reason") or "").strip():
            self.add_error("disabled_reason", "Give a reason for switching it off.")
        return data


@admin.register(Process)
class ProcessAdmin(admin.ModelAdmin):
    # is_migration is a filter and on the process's page: the list stays within 1280 px.
    list_display = ("id", "is_enabled", "disabled_reason", "deployed", "trigger", "last_runs")
    list_editable = ("is_enabled", "disabled_reason")
    list_filter = ("is_enabled", "is_migration")
    search_fields = ("id", "description")
    fields = (
        "id",
        "description",
        "is_enabled",
        "disabled_reason",
        "is_migration",
        "trigger",
        "last_runs",
    )
    readonly_fields = ("id", "description", "is_migration", "trigger", "last_runs")
    actions = ("switch_off", "switch_on")
    change_list_template = "admin/processes/process/change_list.html"
    form = ProcessSwitchForm

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a process exists because it was deployed

    def has_delete_permission(self, request: HttpRequest, obj: Process | None = None) -> bool:
        return False  # remove the extension instead; the switch and the runs stay readable

    def get_changelist_instance(self, request: HttpRequest):
        # Read the page's deployed flags, schedules and last runs in one go (process_rows): the
        # screen costs the same queries whatever its length.
        changelist = super().get_changelist_instance(request)
        processes = list(changelist.result_list)
        rows = process_rows_load(process.pk for process in processes)
        for process in processes:
            vars(process)["row"] = rows[process.pk]  # kept on the instance, as cached_property does
        return changelist

    def _row(self, obj: Process) -> ProcessRow:
        memo = vars(obj)
        if "row" not in memo:  # the change page: one process
            memo["row"] = process_rows_load([obj.pk])[obj.pk]
        return memo["row"]

    @admin.display(description="deployed", boolean=True)
    def deployed(self, obj: Process) -> bool:
        return self._row(obj).is_deployed

    @admin.display(description="triggers")
    def trigger(self, obj: Process) -> str:
        """By hand (the API, the CLI, this screen) always; its own trigger (a record entering a
        state, an event); and every schedule that fires it."""
        declared = self._row(obj).declared
        own: str = ""
        if isinstance(declared, RecordTrigger):
            enters = ", ".join(
                f"{name} = {json.dumps(value)}" for name, value in declared.enters.items()
            )
            own = format_html(
                '<li class="trigger-record">when a <code>{}</code> enters <code>{}</code></li>',
                declared.record_type,
                enters,
            )
        elif isinstance(declared, EventTrigger):
            own = format_html(
                '<li class="trigger-event">on each event <code>{}</code></li>', declared.event
            )
        schedules = format_html_join(
            "",
            '<li><a href="{}">{}</a>: <code>{}</code> ({}){}</li>',
            (
                (
                    reverse("admin:processes_processschedule_change", args=[schedule.pk]),
                    schedule.name,
                    schedule.schedule_expr,
                    schedule.schedule_tz,
                    format_html(
                        ' — <strong class="paused">paused</strong>{}',
                        f": {schedule.paused_reason}" if schedule.paused_reason else "",
                    )
                    if schedule.is_paused
                    else "",
                )
                for schedule in self._row(obj).schedules
            ),
        )
        return format_html('<ul class="triggers"><li>by hand</li>{}{}</ul>', own, schedules)

    @admin.display(description=f"last {LAST_RUNS} runs")
    def last_runs(self, obj: Process) -> str:
        runs = self._row(obj).last_runs
        links = format_html_join(
            "",
            '<li><a href="{}" title="{}">{}</a> {}</li>',
            (
                (
                    reverse("admin:processes_processrun_change", args=[run.pk]),
                    run.reason or "",
                    run.state,
                    f"{run.created_at:%Y-%m-%d %H:%M}",
                )
                for run in runs
            ),
        )
        every = format_html('<a href="{}">all runs</a>', _runs_url(process_id=obj.pk))
        if not runs:
            return format_html("none yet · {}", every)
        return format_html('<ul class="last-runs">{}<li>{}</li></ul>', links, every)

    def get_changelist_form(self, request: HttpRequest, **kwargs):
        kwargs.setdefault("form", ProcessSwitchForm)
        return super().get_changelist_form(request, **kwargs)

    def save_model(self, request: HttpRequest, obj: Process, form, change: bool) -> None:
        # The change page and the list's editable switch both save here: audit a switch either way.
        if obj.is_enabled:
            obj.disabled_reason = ""  # switched on: the reason it was off no longer holds
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            if "is_enabled" in form.changed_data:
                action = (
                    ProcessAuditAction.PROCESS_SWITCHED_ON
                    if obj.is_enabled
                    else ProcessAuditAction.PROCESS_SWITCHED_OFF
                )
                audit_record(
                    actor=request.user,
                    action=action,
                    target=f"process:{obj.pk}",
                    after={"isEnabled": obj.is_enabled},
                    reason=obj.disabled_reason,
                )

    @admin.action(description="Switch selected processes off…", permissions=["change"])
    def switch_off(self, request: HttpRequest, queryset: QuerySet[Process]) -> HttpResponse | None:
        """First the confirmation page asking why; then, with the reason, every selected one off."""
        reason = request.POST.get("reason", "").strip()
        if "confirm" not in request.POST or not reason:
            return TemplateResponse(
                request,
                "admin/processes/process/switch_off_confirm.html",
                {
                    **self.admin_site.each_context(request),
                    "opts": self.opts,
                    "processes": list(queryset),
                    "title": "Switch processes off?",
                    "reason": reason,
                    "error": "Give a reason: invokes are refused with it."
                    if "confirm" in request.POST
                    else "",
                    "action_checkbox_name": ACTION_CHECKBOX_NAME,
                },
            )
        count = 0
        with transaction.atomic():
            for process in queryset.select_for_update():
                process.is_enabled, process.disabled_reason = False, reason
                process.save(update_fields=["is_enabled", "disabled_reason", "updated_at"])
                audit_record(
                    actor=request.user,
                    action=ProcessAuditAction.PROCESS_SWITCHED_OFF,
                    target=f"process:{process.pk}",
                    after={"isEnabled": False},
                    reason=process.disabled_reason,
                )
                count += 1
        self.message_user(request, f"{count} process(es) switched off: {reason}", messages.SUCCESS)
        return None

    @admin.action(description="Switch selected processes on", permissions=["change"])
    def switch_on(self, request: HttpRequest, queryset: QuerySet[Process]) -> None:
        with transaction.atomic():
            count = 0
            for process in queryset.select_for_update():
                audit_record(
                    actor=request.user,
                    action=ProcessAuditAction.PROCESS_SWITCHED_ON,
                    target=f"process:{process.pk}",
                    before={
                        "isEnabled": process.is_enabled,
                        "disabledReason": process.disabled_reason,
                    },
                    after={"isEnabled": True},
                )
                count += 1
            queryset.update(is_enabled=True, disabled_reason="")
        self.message_user(request, f"{count} process(es) switched on", messages.SUCCESS)

    def get_urls(self):
        switch = path(
            "instance-switch/",
            self.admin_site.admin_view(self.instance_switch_view),
            name="processes_process_instance_switch",
        )
        plan = path(
            "<path:object_id>/plan/",
            self.admin_site.admin_view(self.plan_view),
            name="processes_process_plan",
        )
        return [switch, plan, *super().get_urls()]

    def plan_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Plan… on a process's page: a run's writes shown, nothing written."""
        if not self.has_change_permission(request):
            raise PermissionDenied
        return plan_view(self.admin_site, self.model._meta, request, object_id)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict | None = None
    ) -> HttpResponse:
        context = {
            "is_instance_on": bool(setting_get(SettingKey.PROCESSES_ENABLED)),
            "can_switch_instance": self.has_change_permission(request),
            **(extra_context or {}),
        }
        return super().changelist_view(request, extra_context=context)

    def instance_switch_view(self, request: HttpRequest) -> HttpResponse:
        """Every process on the instance on or off (``processes.enabled``). GET ``?enabled=1|0``:
        the confirmation page naming what the switch does, with the reason asked for. POST
        ``enabled`` and ``reason`` (required to switch off): done, audited, back to the list."""
        if not self.has_change_permission(request):
            raise PermissionDenied
        data = request.POST if request.method == "POST" else request.GET
        is_on = data.get("enabled") == "1"
        reason = data.get("reason", "").strip()
        if request.method == "POST" and (is_on or reason):
            with transaction.atomic():
                setting_set(SettingKey.PROCESSES_ENABLED, 1 if is_on else 0, by=request.user)
                audit_record(
                    actor=request.user,
                    target="processes.enabled",
                    reason=reason,
                    action=ProcessAuditAction.ALL_SWITCHED_ON
                    if is_on
                    else ProcessAuditAction.ALL_SWITCHED_OFF,
                )
            self.message_user(
                request,
                "every process is switched on"
                if is_on
                else (
                    f"every process on the instance is switched off ({reason}): invokes answer 409 and "
                    "running runs stop at their next step"
                ),
                messages.SUCCESS if is_on else messages.WARNING,
            )
            return HttpResponseRedirect(reverse("admin:processes_process_changelist"))
        if request.method not in ("GET", "POST"):
            return HttpResponseNotAllowed(["GET", "POST"])
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "is_on": is_on,
            "reason": reason,
            "title": "Switch every process back on?" if is_on else "Switch every process off?",
            "error": "Give a reason: it is kept in the audit trail."
            if request.method == "POST"
            else "",
            "running": ProcessRun.objects.filter(state__in=states_from(RunMove.CANCEL)).count(),
        }
        status = 400 if request.method == "POST" else 200
        return TemplateResponse(
            request, "admin/processes/process/instance_switch_confirm.html", context, status=status
        )
