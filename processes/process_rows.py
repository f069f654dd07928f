"""What the Processes screen shows beside each process, read for a whole page of processes at once.

Every column that is not on the ``process`` row itself (deployed or not, its schedules, its last
runs) is one query for the whole page, so the screen costs the same number of queries for 5
processes as for 50: the last runs come from one windowed query (``ROW_NUMBER() OVER (PARTITION BY
process_id …)``), not one query per row.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import F, Window
from django.db.models.functions import RowNumber

from extensions.models import ExtensionKind, ExtensionModule, ExtensionStatus
from processes.api.reads import LAST_RUNS
from processes.models import ProcessRun
from processes.schedules.models import ProcessSchedule


@dataclass
class ProcessRow:
    is_deployed: bool = False
    schedules: list[ProcessSchedule] = field(default_factory=list)
    last_runs: list[ProcessRun] = field(default_factory=list)


def process_rows_load(process_ids: Iterable[str]) -> dict[str, ProcessRow]:
    """For each id: whether it is deployed, every schedule that fires it, its last runs (newest
    first). Three queries, however many ids."""
    ids = list(process_ids)
    rows = {process_id: ProcessRow() for process_id in ids}
    if not ids:
        return rows
    deployed = ExtensionModule.objects.filter(
        pk__in=ids, kind=ExtensionKind.PROCESS, status=ExtensionStatus.ACTIVE
    ).values_list("pk", flat=True)
    for process_id in deployed:
        rows[process_id].is_deployed = True
    for schedule in ProcessSchedule.objects.filter(process_id__in=ids).order_by(
        "process_id", "name"
    ):
        rows[schedule.process_id].schedules.append(schedule)
    newest = [F("created_at").desc(), F("pk").desc()]
    runs = (
        ProcessRun.objects.filter(process_id__in=ids)
        .annotate(place=Window(RowNumber(), partition_by=[F("process_id")], order_by=newest))
        .filter(place__lte=LAST_RUNS)
        .only("run_id", "process_id", "state", "reason", "created_at", "finished_at")
        .order_by("process_id", "place")
    )
    by_process: dict[str, list[ProcessRun]] = defaultdict(list)
    for run in runs:
        by_process[run.process_id].append(run)
    for process_id, found in by_process.items():
        rows[process_id].last_runs = found
    return rows
