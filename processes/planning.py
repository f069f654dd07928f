"""Whether this thread is planning a run (``processes.dry_run``): what must not leave the instance
while it does, such as an AI provider's call, stops the plan at that step instead."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from records.catalog import RecordTypeNotFound, record_type_get
from records.watches import RecordWritten

_planning: ContextVar[bool] = ContextVar("processes_planning", default=False)
_written: ContextVar[list[PlannedWrite] | None] = ContextVar("processes_planned", default=None)
_seen: ContextVar[PlanSeen | None] = ContextVar("processes_plan_seen", default=None)


@dataclass(frozen=True)
class PlannedWrite:
    """One write the plan made: the step, the record, and what the write put in it."""

    step: str
    pg_row_id: Any
    fields: dict[str, Any]  # a create's whole parent; an update's changed fields
    lines: list[Any] | None  # a create's lines


@dataclass(frozen=True)
class PlannedWindow:
    """A delete step that met a full delete window: nothing written, the run would wait."""

    step: str
    record_type: str
    cap: str
    retry_at: datetime
    message: str


@dataclass
class PlanSeen:
    """What the plan met besides writes: placeholders handed to later steps, full delete windows."""

    # A stand-in string per source-minted id a later step may use → its label (``po.externalId``).
    placeholders: dict[str, str] = field(default_factory=dict)
    shown: set[str] = field(default_factory=set)  # the labels some planned record carries
    windows: list[PlannedWindow] = field(default_factory=list)
    nonce: str = field(default_factory=lambda: uuid.uuid4().hex[:8])


class PlanStops(BaseException):
    """The plan cannot see past this step without acting outside the instance. A
    ``BaseException``, so the engine's handlers of a failing step let it through to the plan."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


@contextmanager
def planning() -> Iterator[tuple[list[PlannedWrite], PlanSeen]]:
    """Plan in this thread meanwhile; yields the writes the plan makes, in order, and what else
    it met (``PlanSeen``)."""
    written: list[PlannedWrite] = []
    seen = PlanSeen()
    token, kept, met = _planning.set(True), _written.set(written), _seen.set(seen)
    try:
        yield written, seen
    finally:
        _planning.reset(token)
        _written.reset(kept)
        _seen.reset(met)


def planned_outcome(outcome: dict[str, Any], *, step_id: str, record_type: str) -> dict[str, Any]:
    """``ctx.steps[id]`` while planning: the id a source has not minted yet is a stand-in string
    (it passes a string field's checks), shown as ``{"$unknown": "<stepId>.externalId"}`` in any
    record a later step builds with it (``placeholders_shown``). Unchanged when not planning."""
    seen = _seen.get()
    if seen is None or outcome.get("externalId") or not outcome.get("pgRowId"):
        return outcome
    try:
        if record_type_get(record_type).source is None:
            return outcome  # a type no source holds never gets an id: nothing is unknown
    except RecordTypeNotFound:
        return outcome
    label = f"{step_id}.externalId"
    stand_in = f"$unknown:{label}:{seen.nonce}"
    seen.placeholders[stand_in] = label
    return {**outcome, "externalId": stand_in}


def placeholders_shown(value: Any, seen: PlanSeen) -> Any:
    """``value`` with every stand-in string replaced by ``{"$unknown": "<stepId>.externalId"}``."""
    if isinstance(value, str) and value in seen.placeholders:
        seen.shown.add(seen.placeholders[value])
        return {"$unknown": seen.placeholders[value]}
    if isinstance(value, dict):
        return {k: placeholders_shown(v, seen) for k, v in value.items()}
    if isinstance(value, list):
        return [placeholders_shown(v, seen) for v in value]
    return value


def plan_window_note(
    *, step_id: str, record_type: str, cap: str, retry_at: datetime, message: str
) -> None:
    """While planning: the delete at ``step_id`` met a full delete window (shown as ``window``)."""
    seen = _seen.get()
    if seen is not None:
        seen.windows.append(PlannedWindow(step_id, record_type, cap, retry_at, message))


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
