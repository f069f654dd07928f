"""Which runs a purge takes: finished ones past the thresholds, and what belongs to them.

A run goes when it ended (committed, failed, rolled back, cancelled, refused) and either it
finished more than ``history.retain_days`` ago or more than ``history.retain_runs`` finished runs
are newer than it — or, for one call, it finished before ``finishedBefore``. It stays, whatever
its age, while a delete one of its steps asked for is held pending an operator's decision, or
while a run started from it (a retry, a redirect) has not ended. The purge walks these runs
oldest first by ``(finished_at, run_id)`` (the ``process_run_finished`` index) in pages.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Q, QuerySet
from django.utils import timezone

from guardrails.models import HeldDelete, HeldStatus
from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get
from processes.models import TERMINAL_STATES, ProcessRun

# A run's place in the walk: (finished_at, run_id).
Position = tuple[datetime, uuid.UUID]


@dataclass(frozen=True)
class PurgeRule:
    """What goes: finished before ``before``, or at or before ``boundary`` in the walk's order."""

    before: datetime
    boundary: Position | None  # the newest run past history.retain_runs, if that many exist
    described: str  # for the audit: which thresholds, in their words

    def runs(self) -> QuerySet[ProcessRun]:
        finished = ProcessRun.objects.filter(state__in=TERMINAL_STATES, finished_at__isnull=False)
        goes = Q(finished_at__lt=self.before)
        if self.boundary is not None:
            at, run_id = self.boundary
            goes |= Q(finished_at__lt=at) | Q(finished_at=at, run_id__lte=run_id)
        return finished.filter(goes)


def purge_rule(*, finished_before: datetime | None = None) -> PurgeRule:
    """The thresholds in force now, or ``finished_before`` alone when a call gives one."""
    if finished_before is not None:
        return PurgeRule(finished_before, None, f"finishedBefore {finished_before.isoformat()}")
    days = setting_get(SettingKey.HISTORY_RETAIN_DAYS)
    keep = setting_get(SettingKey.HISTORY_RETAIN_RUNS)
    newest_first = ProcessRun.objects.filter(
        state__in=TERMINAL_STATES, finished_at__isnull=False
    ).order_by("-finished_at", "-run_id")
    # The first run past the newest ``keep``: it and every older one go (one index walk).
    past = newest_first.values_list("finished_at", "run_id")[keep : keep + 1]
    boundary = next(((at, run_id) for at, run_id in past if at is not None), None)
    return PurgeRule(
        timezone.now() - timedelta(days=days),
        boundary,
        f"history.retain_days {days}, history.retain_runs {keep}",
    )


def page_after(rule: PurgeRule, after: Position | None, size: int) -> list[Position]:
    """The next ``size`` runs the rule takes, oldest first, after ``after`` in the walk."""
    runs = rule.runs()
    if after is not None:
        at, run_id = after
        runs = runs.filter(Q(finished_at__gt=at) | Q(finished_at=at, run_id__gt=run_id))
    page = runs.order_by("finished_at", "run_id").values_list("finished_at", "run_id")[:size]
    return [(at, run_id) for at, run_id in page if at is not None]  # all are: finished runs


def runs_held_back(run_ids: Iterable[uuid.UUID]) -> set[uuid.UUID]:
    """Of ``run_ids``, the runs that stay for now: a delete they asked for is held pending, or a
    run started from them (retry, redirect) has not ended."""
    ids = list(run_ids)
    by_text = {str(run_id): run_id for run_id in ids}
    held = HeldDelete.objects.filter(
        status=HeldStatus.PENDING, process_run_id__in=list(by_text)
    ).values_list("process_run_id", flat=True)
    live_links = (
        ProcessRun.objects.filter(linked_from__in=ids)
        .exclude(state__in=TERMINAL_STATES)
        .values_list("linked_from", flat=True)
    )
    return {by_text[text] for text in held} | {run_id for run_id in live_links if run_id}
