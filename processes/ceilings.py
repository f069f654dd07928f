"""Per-run ceilings: maximum runtime and maximum writes, with defaults sized off the slice budget."""

from __future__ import annotations

from dataclasses import dataclass

from guardrails.settings import setting_get


@dataclass(frozen=True)
class Ceilings:
    max_run_ms: int
    max_writes: int
    slice_max_rows: int
    slice_max_ms: int
    slice_cap: int


def ceilings_for(step_count: int) -> Ceilings:
    """The ceilings in force. Unset (0) ones are the most work the slice caps already allow one
    run to do — slice cap × slice wall clock, and slice cap × rows per slice × steps per row — so
    nothing that was going to finish is stopped by them, and a stuck run is still bounded."""
    slice_cap = setting_get("processes.slice_cap")
    rows = setting_get("PROCESS_SLICE_MAX_ROWS")
    slice_ms = setting_get("PROCESS_SLICE_MAX_MS")
    return Ceilings(
        max_run_ms=setting_get("processes.max_run_ms") or slice_cap * slice_ms,
        max_writes=setting_get("processes.max_writes_per_run")
        or slice_cap * rows * max(step_count, 1),
        slice_max_rows=rows,
        slice_max_ms=slice_ms,
        slice_cap=slice_cap,
    )
