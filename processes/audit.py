"""The processes room's operator actions, as the audit trail (``kernel.audit``) names them.

Each is recorded by the service that makes the change, inside its transaction: steering
(``processes.steering``), the switches (``processes.admin``), schedules
(``processes.schedules.firing``) and human tasks decided (``processes.human_tasks.service``).
"""

from __future__ import annotations

from enum import StrEnum


class ProcessAuditAction(StrEnum):
    PROCESS_SWITCHED_OFF = "process.switched_off"
    PROCESS_SWITCHED_ON = "process.switched_on"
    # The instance switch (setting ``processes.enabled``): every process at once.
    ALL_SWITCHED_OFF = "process.all_switched_off"
    ALL_SWITCHED_ON = "process.all_switched_on"
    RUN_CANCELLED = "run.cancelled"
    RUN_RESUMED = "run.resumed"
    RUN_ROLLED_BACK = "run.rolled_back"
    RUN_RETRIED = "run.retried"  # target: the old run; after: the new run
    RUN_REDIRECTED = "run.redirected"
    # The same run carried on from its failed step (before: state, version; after: the version
    # it goes on with, the redrive's number, the records changed since under changedSince).
    RUN_REDRIVEN = "run.redriven"
    # A bulk action over runs (target: bulk:<id>; after: action, filter, count, outcome, who).
    RUNS_BULK = "runs.bulk"
    RUNS_BULK_REJECTED = "runs.bulk_rejected"
    SCHEDULE_PAUSED = "schedule.paused"
    SCHEDULE_RESUMED = "schedule.resumed"
    TASK_COMPLETED = "task.completed"
    TASK_REJECTED = "task.rejected"
    # One per purge (not a dry run): what it purged, by which rule, and where it archived.
    HISTORY_PURGED = "history.purged"
