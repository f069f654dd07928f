"""The run timeout: a run not finished ``processes.run_timeout_ms`` after it was created is
cancelled, through the same path as a person's cancel (``steering.run_stop``), with the failure
code ``run_timeout`` (the queue's ``failure.code``) and a reason that names the setting.

Checked every minute by the ``system.processes.run_timeout`` job, so a run ends at most about a
minute after its time; a working run stops at its next step boundary, as a cancelled one does.
0 (the default) times nothing out. Unlike ``processes.max_run_ms`` (a run's own working time,
which ends it committed with what it did), this counts from creation — queue and waits included.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get
from processes.codes import ProcessCode
from processes.models import TERMINAL_STATES, ProcessRun
from processes.steering import run_stop

# Runs looked at per sweep: the rest are the next minute's (a backlog is cut down, never all held).
SWEEP_RUNS = 1_000


def runs_overdue(now: datetime, timeout_ms: int) -> list[object]:
    """Runs not ended, created before ``now`` less the timeout, not already told (oldest first)."""
    return list(
        ProcessRun.objects.exclude(state__in=TERMINAL_STATES)
        .filter(created_at__lt=now - timedelta(milliseconds=timeout_ms))
        .exclude(refusal_code=ProcessCode.RUN_TIMEOUT)
        .order_by("created_at")
        .values_list("pk", flat=True)[:SWEEP_RUNS]
    )


def runs_timeout_sweep(now: datetime | None = None) -> int:
    """Cancel every overdue run; answers how many were cancelled or told to stop."""
    timeout_ms = setting_get(SettingKey.PROCESSES_RUN_TIMEOUT_MS)
    if not timeout_ms:
        return 0
    now = now or timezone.now()
    reason = (
        f"run_timeout: not finished within {timeout_ms} ms of its creation "
        "(processes.run_timeout_ms)"
    )
    stopped = 0
    for run_pk in runs_overdue(now, timeout_ms):
        run = run_stop(run_pk, actor=None, reason=reason, code=ProcessCode.RUN_TIMEOUT)
        stopped += run.refusal_code == ProcessCode.RUN_TIMEOUT
    return stopped
