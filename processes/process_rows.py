"""What the Processes screen shows beside each process, read for a whole page of processes at once.

Every column that is not on the ``process`` row itself (deployed or not, its schedules, its last
runs) is one query for the whole page, so the screen costs the same number of queries for 5
processes as for 50: the last runs come from one query, an index-bounded ``LIMIT`` per process
glued with ``UNION ALL`` (``processes.api.reads.runs_newest_by_process``) — not one query per row,
and not a window over every run the processes ever had.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from extensions.models import ExtensionKind, ExtensionModule, ExtensionStatus
from processes.api.reads import runs_newest_by_process
from processes.models import ProcessRun
from processes.schedules.models import ProcessSchedule
from processes.triggers.shape import EventTrigger, RecordTrigger, trigger_of


@dataclass
class ProcessRow:
    is_deployed: bool = False
    # The deployed version's own trigger (a record entering a state, an event), if it has one.
    declared: RecordTrigger | EventTrigger | None = None
    schedules: list[ProcessSchedule] = field(default_factory=list)
    last_runs: list[ProcessRun] = field(default_factory=list)


def process_rows_load(process_ids: Iterable[str]) -> dict[str, ProcessRow]:
    """For each id: whether it is deployed (and its declared trigger), every schedule that fires
    it, its last runs (newest first). Three queries, however many ids."""
    ids = list(process_ids)
    rows = {process_id: ProcessRow() for process_id in ids}
    if not ids:
        return rows
    deployed = ExtensionModule.objects.filter(
        pk__in=ids, kind=ExtensionKind.PROCESS, status=ExtensionStatus.ACTIVE
    ).values_list("pk", "definition__trigger")
    for process_id, trigger in deployed:
        rows[process_id].is_deployed = True
        rows[process_id].declared = trigger_of(process_id, {"trigger": trigger})
    for schedule in ProcessSchedule.objects.filter(process_id__in=ids).order_by(
        "process_id", "name"
    ):
        rows[schedule.process_id].schedules.append(schedule)
    last_runs = runs_newest_by_process(
        ProcessRun.objects.only(
            "run_id", "process_id", "state", "reason", "created_at", "finished_at"
        ),
        ids,
    )
    for process_id, found in last_runs.items():
        rows[process_id].last_runs = found
    return rows
