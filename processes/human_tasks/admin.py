"""Processes → Tasks, and the Inbox: the signed-in person's open tasks, each completed with a JSON
output or rejected with a reason right there.

The Inbox lists what ``GET /v1/tasks`` lists as open for the person themself — their own tasks and
their groups' (an administrator's inbox is theirs too, not everyone's) — and decides through the
same service the API calls (``human_tasks.service``), so a decision is audited and wakes the run
the same way, and a task decided meanwhile by someone else is said so, not decided twice. The
Tasks list is every task, read-only, for whoever may view them.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from kernel.errors import InvalidRequest, TurbobaseError
from kernel.input import data_check
from kernel.users import acting_user
from processes.human_tasks.models import HumanTask, TaskState
from processes.human_tasks.service import (
    TASK_REASON_MAX_CHARS,
    output_size_problem,
    task_complete,
    task_reject,
    task_state_shown,
    tasks_open,
)

INBOX_MAX_TASKS = 200


class CompleteForm(forms.Form):
    output = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 40, "class": "task-output"}),
        initial="{}",
        strip=True,
        help_text="JSON: the step's output, for the steps after it.",
        error_messages={"required": "Give the output as JSON (an empty object is {})."},
    )

    def clean_output(self) -> Any:
        text = self.cleaned_data["output"]
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                f"not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
            ) from None
        try:
            data_check(value, path="output")
        except InvalidRequest as exc:
            raise forms.ValidationError(exc.message) from None
        problem = output_size_problem(value)
        if problem:
            raise forms.ValidationError(f"the output {problem}")
        return value


class RejectForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 40, "class": "task-reason"}),
        max_length=TASK_REASON_MAX_CHARS,
        strip=True,
        help_text="Why: the step fails TASK_REJECTED with it.",
        error_messages={"required": "Give a reason: the run's step fails with it."},
    )


def _run_url(task: HumanTask) -> str:
    return reverse("admin:processes_processrun_change", args=[task.run_id])


@admin.register(HumanTask)
class HumanTaskAdmin(admin.ModelAdmin):
    list_display = (
        "title",
        "state_shown",
        "assignee",
        "process_id",
        "run_link",
        "created_at",
        "decided_by",
    )
    list_filter = ("state", "process_id")
    search_fields = ("title", "assignee", "process_id", "step_id")
    list_select_related = ("decided_by",)
    ordering = ("-created_at",)
    fields = (
        "title",
        "state",
        "assignee",
        "process_id",
        "run_link",
        "step_id",
        "details",
        "created_at",
        "expires_at",
        "decided_by",
        "decided_at",
        "output",
        "reason",
    )
    readonly_fields = fields
    change_list_template = "admin/processes/humantask/change_list.html"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a run's task step makes a task

    def has_change_permission(self, request: HttpRequest, obj: HumanTask | None = None) -> bool:
        return False  # decided in the Inbox, by its assignee

    def has_delete_permission(self, request: HttpRequest, obj: HumanTask | None = None) -> bool:
        return False  # the decision is the run's history

    @admin.display(description="state")
    def state_shown(self, task: HumanTask) -> str:
        return task_state_shown(task)

    @admin.display(description="run")
    def run_link(self, task: HumanTask) -> str:
        return format_html('<a href="{}">{}</a>', _run_url(task), str(task.run_id)[:8])

    # --- the Inbox --------------------------------------------------------------------------------

    def get_urls(self) -> list:
        return [
            path(
                "inbox/",
                self.admin_site.admin_view(self.inbox_view),
                name="processes_humantask_inbox",
            ),
            path(
                "inbox/<uuid:task_id>/<str:verb>/",
                self.admin_site.admin_view(self.decide_view),
                name="processes_humantask_decide",
            ),
            *super().get_urls(),
        ]

    def changelist_view(
        self, request: HttpRequest, extra_context: dict | None = None
    ) -> HttpResponse:
        context = {"inbox_open": tasks_open(acting_user(request)).count(), **(extra_context or {})}
        return super().changelist_view(request, extra_context=context)

    def inbox_view(self, request: HttpRequest) -> HttpResponse:
        return self._inbox(request, {})

    def decide_view(self, request: HttpRequest, task_id: Any, verb: str) -> HttpResponse:
        """POST only: complete (``output``, JSON) or reject (``reason``) one task of the inbox."""
        if verb not in ("complete", "reject") or request.method != "POST":
            raise Http404("complete or reject, by POST")
        user = acting_user(request)
        form: forms.Form = (CompleteForm if verb == "complete" else RejectForm)(
            request.POST, prefix=str(task_id)
        )
        if not form.is_valid():
            return self._inbox(request, {str(task_id): {verb: form}})  # as admin forms do: 200
        try:
            if verb == "complete":
                task = task_complete(
                    user=user, task_id=str(task_id), output=form.cleaned_data["output"]
                )
            else:
                task = task_reject(
                    user=user, task_id=str(task_id), reason=form.cleaned_data["reason"]
                )
        except TurbobaseError as exc:  # decided by someone else meanwhile, expired, not yours
            self.message_user(request, exc.message, messages.WARNING)
            return HttpResponseRedirect(reverse("admin:processes_humantask_inbox"))
        done = "completed" if task.state == TaskState.COMPLETED else "rejected"
        self.message_user(request, f"task “{task.title}” {done}; its run goes on", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:processes_humantask_inbox"))

    def _inbox(
        self, request: HttpRequest, bound: dict[str, dict[str, forms.Form]], status: int = 200
    ) -> HttpResponse:
        tasks = list(
            tasks_open(acting_user(request))
            .select_related("run__invoked_by")
            .order_by("created_at")[:INBOX_MAX_TASKS]
        )
        rows = []
        for task in tasks:
            key, forms_bound = str(task.pk), bound.get(str(task.pk), {})
            rows.append(
                {
                    "task": task,
                    "details": json.dumps(task.details, indent=2, ensure_ascii=False)
                    if task.details
                    else "",
                    "run_url": _run_url(task),
                    "invoked_by": task.run.invoked_by.get_username()
                    if task.run.invoked_by
                    else "-",
                    "complete": forms_bound.get("complete") or CompleteForm(prefix=key),
                    "reject": forms_bound.get("reject") or RejectForm(prefix=key),
                    "complete_url": reverse(
                        "admin:processes_humantask_decide", args=[task.pk, "complete"]
                    ),
                    "reject_url": reverse(
                        "admin:processes_humantask_decide", args=[task.pk, "reject"]
                    ),
                }
            )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Inbox",
            "rows": rows,
            "is_truncated": len(tasks) == INBOX_MAX_TASKS,
        }
        return TemplateResponse(
            request, "admin/processes/humantask/inbox.html", context, status=status
        )
