"""Refusals of the schedules: each names the ``schedules[i].<field>`` of ``turbobase/schedules.json``."""

from __future__ import annotations

from extensions.errors import ExtensionInUse
from kernel.errors import AdminRequired, InvalidRequest
from processes.codes import ProcessCode, ProcessError


class ScheduleInvalid(InvalidRequest):
    """A schedules.json entry is not a schedule this instance can run."""

    error = ProcessError.INVALID_SCHEDULE
    code = ProcessCode.SCHEDULE_INVALID


class ScheduleProcessNotDeployed(InvalidRequest):
    """The schedule names a process that neither is deployed nor is declared in the same deploy."""

    error = ProcessError.INVALID_SCHEDULE
    code = ProcessCode.SCHEDULE_PROCESS_NOT_DEPLOYED


class ScheduleNameReserved(InvalidRequest):
    """Names beginning ``system.`` are the platform's own recurring jobs."""

    error = ProcessError.INVALID_SCHEDULE
    code = ProcessCode.SCHEDULE_NAME_RESERVED


class ScheduleForbidden(AdminRequired):
    """Only an administrator deploys a schedule."""


class ProcessScheduled(ExtensionInUse):
    """A schedule that survives this change still runs the process; remove both in one deploy,
    or point the schedule at another process."""

    code = ProcessCode.PROCESS_SCHEDULED
