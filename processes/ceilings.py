"""Per-run ceilings: maximum runtime and maximum writes, with defaults sized off the slice budget.

The runtime is the run's working time — what its deliveries spent working it, summed across every
delivery, slice, resume and redrive (``ProcessRun.worked_ms``) — not the wall clock since it
started: a run parked on a sleep, a wait or a backoff uses none of it, so a 30-day sleep is not
stopped by a ceiling of a week's work."""

from __future__ import annotations

from dataclasses import dataclass

from guardrails.setting_keys import SettingKey
from guardrails.settings import setting_get


@dataclass(frozen=True)
class Ceilings:
    max_run_ms: int  # working time (``ChainRunner.worked_ms``), not wall clock
    max_writes: int
    slice_max_rows: int
    slice_max_ms: int
    slice_cap: int
    step_count: int = 1
    # Whether the setting read 0 and the ceiling is the slice budget's (``ceilings_for``).
    max_run_ms_derived: bool = False
    max_writes_derived: bool = False

    def runtime_named(self) -> str:
        """The runtime ceiling as a stop reason names it: its setting, or what it was derived from
        when that setting reads 0 (a reason that cited a 0 setting as "30 ms" explained nothing)."""
        if not self.max_run_ms_derived:
            return f"processes.max_run_ms ({self.max_run_ms} ms)"
        return (
            f"of {self.max_run_ms} ms (processes.max_run_ms is 0, so it is derived: "
            f"processes.slice_cap {self.slice_cap} × processes.slice_max_ms {self.slice_max_ms} ms)"
        )

    def writes_named(self) -> str:
        """The write ceiling as a stop reason names it, the same way."""
        if not self.max_writes_derived:
            return f"processes.max_writes_per_run ({self.max_writes})"
        steps = f"{self.step_count} step{'s' if self.step_count != 1 else ''}"
        return (
            f"of {self.max_writes} writes (processes.max_writes_per_run is 0, so it is derived: "
            f"processes.slice_cap {self.slice_cap} × processes.slice_max_rows {self.slice_max_rows} "
            f"× {steps})"
        )


def ceilings_for(step_count: int) -> Ceilings:
    """The ceilings in force. Unset (0) ones are the most work the slice caps already allow one
    run to do — slice cap × slice working time, and slice cap × rows per slice × steps per row — so
    nothing that was going to finish is stopped by them, and a stuck run is still bounded."""
    slice_cap = setting_get(SettingKey.PROCESSES_SLICE_CAP)
    rows = setting_get(SettingKey.PROCESSES_SLICE_MAX_ROWS)
    slice_ms = setting_get(SettingKey.PROCESSES_SLICE_MAX_MS)
    max_run_ms = setting_get(SettingKey.PROCESSES_MAX_RUN_MS)
    max_writes = setting_get(SettingKey.PROCESSES_MAX_WRITES_PER_RUN)
    steps = max(step_count, 1)
    return Ceilings(
        max_run_ms=max_run_ms or slice_cap * slice_ms,
        max_writes=max_writes or slice_cap * rows * steps,
        slice_max_rows=rows,
        slice_max_ms=slice_ms,
        slice_cap=slice_cap,
        step_count=steps,
        max_run_ms_derived=not max_run_ms,
        max_writes_derived=not max_writes,
    )
