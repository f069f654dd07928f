"""The admin index's dashboard: what an operator should look at first, each a link to its list.

The signed-in person's open tasks (their own and their groups', linking to their Inbox), held
deletes waiting for a decision, runs that failed in the last 24 hours, and the queue's counts
(every run by state); below them, the last purge of the run history (``last_purge``). Each tile
but the first is shown only to someone who may view the list it links to; everyone's Inbox is
their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlencode

from django.contrib.admin import AdminSite
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone

from guardrails.models import Guardrail, HeldStatus
from kernel.audit import AuditEvent
from kernel.users import acting_user
from processes.audit import ProcessAuditAction
from processes.human_tasks.service import tasks_open
from processes.models import ProcessRun, RunState
from processes.run_tally import tally_counts

FAILED_WINDOW = timedelta(hours=24)


@dataclass(frozen=True)
class Tile:
    label: str
    count: int
    url: str
    is_alarm: bool = False  # worth an operator's attention when not zero


def _url(name: str, **filters: str) -> str:
    return reverse(f"admin:{name}") + ("?" + urlencode(filters) if filters else "")


def _may_view(request: HttpRequest, site: AdminSite, model: type) -> bool:
    model_admin = site._registry.get(model)
    return model_admin is not None and model_admin.has_view_permission(request)


def dashboard_tiles(request: HttpRequest, site: AdminSite) -> list[Tile]:
    tiles: list[Tile] = [
        Tile(
            "open tasks",  # the person's own and their groups'
            tasks_open(acting_user(request)).count(),
            _url("processes_humantask_inbox"),
            is_alarm=True,
        )
    ]
    if _may_view(request, site, Guardrail):
        pending = Guardrail.objects.filter(status=HeldStatus.PENDING).count()
        tiles.append(
            Tile(
                "held deletes pending",
                pending,
                _url("guardrails_guardrail_changelist", status__exact=HeldStatus.PENDING),
                is_alarm=True,
            )
        )
    if _may_view(request, site, ProcessRun):
        since = (timezone.now() - FAILED_WINDOW).replace(microsecond=0)
        failed = ProcessRun.objects.filter(state=RunState.FAILED, finished_at__gte=since).count()
        tiles.append(
            Tile(
                "runs failed in the last 24 h",
                failed,
                _url(
                    "processes_processrun_changelist",
                    state__exact=RunState.FAILED,
                    finished_at__gte=since.isoformat(),
                ),
                is_alarm=True,
            )
        )
        counts = tally_counts()  # the run tally: the same cost at any number of runs
        tiles.extend(
            Tile(
                f"runs {state.label.lower()}",
                counts.get(state.value, 0),
                _url("processes_processrun_changelist", state__exact=state.value),
            )
            for state in RunState
        )
    return tiles


@dataclass(frozen=True)
class LastPurge:
    at: object  # a datetime
    runs: int
    by: str  # who ran it, or the hourly job
    url: str  # the audit event


def last_purge(request: HttpRequest, site: AdminSite) -> LastPurge | None:
    """The newest purge of the run history (its audit event), for whoever may read the audit."""
    if not _may_view(request, site, AuditEvent):
        return None
    event = (
        AuditEvent.objects.filter(action=ProcessAuditAction.HISTORY_PURGED).order_by("-at").first()
    )
    if event is None:
        return None
    after = event.after if isinstance(event.after, dict) else {}
    return LastPurge(
        at=event.at,
        runs=int(after.get("runs") or 0),
        by=event.actor_name or "the hourly job",
        url=reverse("admin:kernel_auditevent_change", args=[event.pk]),
    )
