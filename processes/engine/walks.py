"""Where a delivery's pass over a plan is and how it ended: the walk's values (no behaviour)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from processes.engine.plan import PlannedStep
from processes.engine.statuses import WalkStatus
from processes.models import (
    ProcessRunStep,
    RunState,
)


@dataclass(frozen=True)
class Stop:
    state: RunState
    reason: str


CANCELLED = Stop(RunState.CANCELLED, "cancelled on request")


@dataclass(frozen=True, slots=True)
class Place:
    """Where a pass walks: its row (a migration's; none for a chain), that row's key and visit,
    and whether it may stop between steps (a chain) or finishes its row whole (a migration)."""

    row_key: str
    visit: int
    row: dict | None
    stop_between_steps: bool


@dataclass(frozen=True)
class Walk:
    """Where a pass over the plan ended: done, or at ``position`` for ``status``."""

    status: WalkStatus
    position: int
    planned: PlannedStep | None = None
    stop: Stop | None = None
    row: ProcessRunStep | None = None
    result: Any = None

    # Each status carries what it needs; these read it, and name a walk built without it.
    @property
    def at(self) -> PlannedStep:
        """The step the pass halted at (whenever it did not reach the end)."""
        return _carried(self, self.planned)

    @property
    def ledger_row(self) -> ProcessRunStep:
        """The ledger row it halted on (waiting on the source, or failed)."""
        return _carried(self, self.row)

    @property
    def stopped(self) -> Stop:
        """Why the pass ended at a step boundary (a cancel, a switch, a ceiling)."""
        return _carried(self, self.stop)


def _carried(walk: Walk, value: Any) -> Any:
    if value is None:
        raise AssertionError(
            f"a walk that ended {walk.status} at {walk.position} lacks what it carries"
        )
    return value
