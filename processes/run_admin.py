"""The run page in the admin: what a run did, on a time axis and in its (paginated) ledger.

The page is read-only; the run is steered from it with Cancel, Resume, Redrive and Roll back, each shown
only where the run-state table (``processes.status``) lets the run make that move, each behind a
confirmation page that names what it will do, and each done by the same service the API uses
(``processes.steering``, ``processes.redrive``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone

from kernel.errors import TurbobaseError
from kernel.ids import uuid_or_none
from kernel.users import acting_user
from processes.models import Process, ProcessRun, ProcessRunStep, RunState
from processes.redrive import run_redrive
from processes.run_search.keys import runs_with_input
from processes.status import RunMove, states_from
from processes.steering import run_cancel, run_resume, run_rollback
from processes.timeline import STEP_COLUMNS, timeline_build

LEDGER_PAGE_ROWS = 100
LINKED_RUNS = 10


@dataclass(frozen=True)
class Steer:
    """One button on the run page: the move it makes and what its confirmation says."""

    name: str
    label: str
    move: RunMove
    explains: str


STEERS = {
    steer.name: steer
    for steer in (
        Steer(
            "cancel",
            "Cancel",
            RunMove.CANCEL,
            "A queued run never executes; a parked run ends now; a working run stops at its next "
            "step. What it already wrote stays: roll it back afterwards to undo that.",
        ),
        Steer(
            "resume",
            "Resume",
            RunMove.RESUME,
            "The run goes back on the queue and carries on at the step it stopped on; the steps "
            "it never reached are run now.",
        ),
        Steer(
            "redrive",
            "Redrive",
            RunMove.REDRIVE,
            "The same run goes back on the queue at the step that failed, on the version it ran: "
            "the steps that committed are not run again; the failed attempt stays in the ledger, "
            "set aside. Fix what made the step fail first.",
        ),
        Steer(
            "rollback",
            "Roll back",
            RunMove.ROLLBACK,
            "The run runs again, backwards: every record it created is deleted again (a delete "
            "over the caps is held for approval) and the run ends rolled back.",
        ),
    )
}


def steers_applicable(run: ProcessRun, *, is_migration: bool) -> list[Steer]:
    """The moves the run-state table allows from the run's state (and the run's own conditions)."""
    shown = []
    for steer in STEERS.values():
        if run.state not in states_from(steer.move):
            continue
        if steer.move == RunMove.RESUME and (run.outstanding == 0 or is_migration):
            continue  # nothing left to do, or a migration (invoked again, never resumed)
        shown.append(steer)
    return shown


def _steer_do(steer: Steer, request: HttpRequest, run: ProcessRun) -> str:
    run_id = str(run.pk)
    if steer.move == RunMove.CANCEL:
        done = run_cancel(user=acting_user(request), run_id=run_id)
        return (
            f"run cancelled: {done.reason}"
            if done.state == RunState.CANCELLED
            else "cancel requested: the run stops at its next step"
        )
    if steer.move == RunMove.RESUME:
        run_resume(user=acting_user(request), run_id=run_id)
        return "run resumed: it is queued again"
    if steer.move == RunMove.REDRIVE:
        changed = run_redrive(user=acting_user(request), run_id=run_id).changed_since
        since = (
            f"; {len(changed)} of its records changed since its steps wrote them" if changed else ""
        )
        return f"run redriven: it is queued again at the step that failed{since}"
    _, queued = run_rollback(user=acting_user(request), run_id=run_id)
    return (
        "rollback queued: the run is undoing what it created"
        if queued
        else "the run was already rolled back"
    )


@admin.register(ProcessRun)
class ProcessRunAdmin(admin.ModelAdmin):
    list_display = (
        "run_id",
        "process_id",
        "mode",
        "state",
        "outstanding",
        "reason",
        "invoked_by",
        "started_at",
        "finished_at",
    )
    list_filter = ("state", "mode", "process_id")
    search_fields = ("run_id", "process_id", "invoked_by__username", "reason")
    search_help_text = (
        "A run id, process, user or reason — or input.FIELD=VALUE for a searchable input field "
        '(declared with "x-search": true).'
    )
    list_select_related = ("invoked_by",)
    ordering = ("-created_at",)
    # State, pending reason, duration and version are in the page's summary above these.
    fields = (
        "run_id",
        "mode",
        "reason",
        "outstanding",
        "wake_at",
        "invoked_by",
        "schedule_name",
        "input",
        "created_at",
        "started_at",
        "finished_at",
        "slices",
        "writes",
        "worked_ms",  # the working time the runtime ceiling counts (processes.max_run_ms)
        "redrives",
        "trace_id",  # its OpenTelemetry trace (blank while tracing is off)
    )
    readonly_fields = fields
    change_form_template = "admin/processes/processrun/change_form.html"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: ProcessRun | None = None) -> bool:
        return False  # the form is read-only; steering has its own buttons and permission

    def has_delete_permission(self, request: HttpRequest, obj: ProcessRun | None = None) -> bool:
        return False

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[ProcessRun], search_term: str
    ) -> tuple[QuerySet[ProcessRun], bool]:
        """``input.FIELD=VALUE`` finds runs by a searchable input field (its index, as the API's
        ``input.<field>`` filter); any other text searches as Django's admin does."""
        term = search_term.strip()
        if term.startswith("input.") and "=" in term:
            name, _, value = term[len("input.") :].partition("=")
            return runs_with_input(queryset, {name: value}), False
        return super().get_search_results(request, queryset, search_term)

    def may_steer(self, request: HttpRequest) -> bool:
        return request.user.has_perm("processes.change_processrun")

    def get_urls(self):
        steer = path(
            "<path:object_id>/steer/<str:action>/",
            self.admin_site.admin_view(self.steer_view),
            name="processes_processrun_steer",
        )
        return [steer, *super().get_urls()]

    def _run(self, object_id: str) -> ProcessRun:
        parsed = uuid_or_none(object_id)
        run = ProcessRun.objects.filter(pk=parsed).first() if parsed else None
        if run is None:
            raise Http404(f"no run {object_id}")
        return run

    def run_context(self, request: HttpRequest, run: ProcessRun) -> dict[str, Any]:
        """Everything the run page shows beside the read-only fields."""
        now = timezone.now()
        rows = list(run.ledger.order_by("sequence", "pk").values_list(*STEP_COLUMNS))
        timeline = timeline_build(run, rows, now=now)
        page = Paginator(run.ledger.order_by("sequence", "pk"), LEDGER_PAGE_ROWS).get_page(
            request.GET.get("page")
        )
        written = {step.pg_row_id for step in page.object_list if step.pg_row_id}
        linked = (
            (
                ProcessRunStep.objects.filter(pg_row_id__in=written)
                .exclude(run_id=run.pk)
                .values_list("run_id", flat=True)
                .distinct()[:LINKED_RUNS]
            )
            if written
            else []
        )
        linked_runs = ProcessRun.objects.filter(pk__in=list(linked)).order_by("-created_at")
        is_migration = Process.objects.filter(pk=run.process_id, is_migration=True).exists()
        versions = sorted({run.module_version})
        return {
            "timeline": timeline,
            "ledger_page": page,
            "ledger_range": page.paginator.get_elided_page_range(
                page.number, on_each_side=2, on_ends=1
            ),
            "linked_runs": linked_runs,
            "versions": versions,
            "is_migration": is_migration,
            "steers": steers_applicable(run, is_migration=is_migration)
            if self.may_steer(request)
            else [],
            "run": run,
            # A task step's task: who it waits for (or who decided), linked to its page.
            "tasks": list(run.tasks.order_by("created_at")),
        }

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict | None = None,
    ) -> HttpResponse:
        run = self._run(object_id)
        if not self.has_view_permission(request, run):
            raise PermissionDenied
        context = {**self.run_context(request, run), **(extra_context or {})}
        return super().change_view(request, object_id, form_url, extra_context=context)

    def steer_view(self, request: HttpRequest, object_id: str, action: str) -> HttpResponse:
        """GET: the confirmation naming what the move does. POST: do it, say so, back to the run."""
        run = self._run(object_id)
        steer = STEERS.get(action)
        if steer is None:
            raise Http404(f"no action {action!r}")
        if not self.may_steer(request):
            raise PermissionDenied
        run_url = reverse("admin:processes_processrun_change", args=[run.pk])
        if request.method == "POST":
            try:
                self.message_user(request, _steer_do(steer, request, run), messages.SUCCESS)
            except TurbobaseError as exc:
                self.message_user(request, f"{steer.label} refused: {exc}", messages.ERROR)
            return HttpResponseRedirect(run_url)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "run": run,
            "steer": steer,
            "run_url": run_url,
            "title": f"{steer.label} run {run.pk} of {run.process_id}?",
            "applies": run.state in states_from(steer.move),
        }
        return TemplateResponse(request, "admin/processes/processrun/steer_confirm.html", context)
