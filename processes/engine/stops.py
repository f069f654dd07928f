"""What stops a chain at a step boundary: a cancel, an off switch, or a per-run ceiling.

Nothing here costs a statement per step: the cancel request is the one the last ledger row's
statement read back (``Lease.cancel_seen``, or the claim's), the switches are re-read at most
once a second (the process's first read by the claim, ``engine.claim``), the ceilings are
counted in memory.
"""

from __future__ import annotations

import time

from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get
from processes.ceilings import Ceilings
from processes.engine.lease import Lease
from processes.engine.walks import CANCELLED, Stop
from processes.models import Process, ProcessRun, RunState


class BoundaryStops:
    """One delivery's stop check. ``switch_read_at`` (``time.monotonic()``): when the process's
    switch was last read on by the caller (a sync run's invoke); else the claim's answer counts,
    read as the lease was taken."""

    def __init__(
        self, run: ProcessRun, lease: Lease | None, *, switch_read_at: float | None = None
    ) -> None:
        self.run, self.lease = run, lease
        self._switch_on = True
        self._switch_read_at = float("-inf") if switch_read_at is None else switch_read_at
        if switch_read_at is None and lease is not None and lease.switch_seen is not None:
            self._switch_on, self._switch_read_at = lease.switch_seen, lease.taken_at
        # This delivery's start, for the runtime ceiling (a walk without a lease: from here).
        self._taken_at = lease.taken_at if lease is not None else time.monotonic()

    def check(self, ceilings: Ceilings) -> Stop | None:
        """The stop at this step boundary, if any."""
        if self._cancel_requested():
            return CANCELLED
        if not setting_get(SettingKey.PROCESSES_ENABLED):
            return Stop(
                RunState.COMMITTED,
                "stopped: every process on the instance was switched off (processes.enabled)",
            )
        if not self._process_enabled():
            return Stop(
                RunState.COMMITTED, f"stopped: an administrator switched {self.run.process_id} off"
            )
        if self.run.writes >= ceilings.max_writes:
            return Stop(
                RunState.COMMITTED,
                f"stopped at the per-run write ceiling {ceilings.writes_named()}",
            )
        if self.worked_ms() >= ceilings.max_run_ms:
            return Stop(
                RunState.COMMITTED,
                f"stopped at the per-run runtime ceiling {ceilings.runtime_named()}",
            )
        return None

    def worked_ms(self) -> int:
        """The run's working time: what earlier deliveries added as they let go, and this one's
        so far. Time parked on a wait, a backoff or the queue is no delivery's, so not counted."""
        return self.run.worked_ms + int((time.monotonic() - self._taken_at) * 1000)

    def _cancel_requested(self) -> bool:
        if self.lease is not None:
            return self.lease.cancel_seen
        return ProcessRun.objects.filter(pk=self.run.pk, cancel_requested=True).exists()

    def _process_enabled(self) -> bool:
        """The process's switch, re-read at most once a second (as the settings are)."""
        now = time.monotonic()
        if now - self._switch_read_at >= 1.0:
            self._switch_on = Process.objects.filter(
                pk=self.run.process_id, is_enabled=True
            ).exists()
            self._switch_read_at = now
        return self._switch_on
