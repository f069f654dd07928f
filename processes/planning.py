"""Whether this thread is planning a run (``processes.dry_run``): what must not leave the instance
while it does, such as an AI provider's call, stops the plan at that step instead."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from records.watches import RecordWritten

_planning: ContextVar[bool] = ContextVar("processes_planning", default=False)
_written: ContextVar[list[PlannedWrite] | None] = ContextVar("processes_planned", default=None)


@dataclass(frozen=True)
class PlannedWrite:
    """One write the plan made: the step, the record, and what the write put in it."""

    step: str
    pg_row_id: Any
    fields: dict[str, Any]  # a create's whole parent; an update's changed fields
    lines: list[Any] | None  # a create's lines


class PlanStops(BaseException):
    """The plan cannot see past this step without acting outside the instance. A
    ``BaseException``, so the engine's handlers of a failing step let it through to the plan."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


@contextmanager
def planning() -> Iterator[list[PlannedWrite]]:
    """Plan in this thread meanwhile; yields the writes the plan makes, in order."""
    written: list[PlannedWrite] = []
    token, kept = _planning.set(True), _written.set(written)
    try:
        yield written
    finally:
        _planning.reset(token)
        _written.reset(kept)


def _keep(write: RecordWritten) -> None:
    written = _written.get()
    if written is None:
        return
    fields = dict(write.record.fields)
    if write.before is not None:  # an update: only what it changes
        fields = {k: v for k, v in fields.items() if write.before.get(k, _ABSENT) != v}
    lines = list(write.record.lines) if write.before is None else None
    written.append(PlannedWrite(write.actor.process_step, write.record.pk, fields, lines))


_ABSENT = object()


def plan_watcher(record_type: str) -> Callable[[RecordWritten], None] | None:
    """While planning, every record type is watched by the plan (records.watches), which keeps
    what each write put in its record."""
    return _keep if _planning.get() else None


def is_planning() -> bool:
    """Whether this thread is planning a run now."""
    return _planning.get()


def outside_call_check(what: str) -> None:
    """Raise ``PlanStops`` when planning: ``what`` would act outside the instance."""
    if _planning.get():
        raise PlanStops(what)
