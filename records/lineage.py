"""A record's lineage: every boundary decision about it, oldest first — who, what, which run and
step caused it, and what its connected source answered.

Read from the write trail (one row per decision, kept forever) and the record's outbound write
states. The run behind a write is described by the processes room, a higher one: it registers
``lineage_runs_describer`` (its process, version and — to a reader who may see the run — an excerpt of its
input), so this room never imports it. Who may read it: whoever may read the record (its type's read policy, as
``GET /v1/rest``); an administrator also reads the lineage of a record that is gone or hidden
(deleted, held), from the trail alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User

from kernel.ids import uuid_or_none
from records.catalog import record_type_get
from records.errors import RecordNotFound
from records.models import (
    RecordWriteState,
    TrailAction,
    TrailOutcome,
    WriteTrail,
)
from records.policies import records_visible

# (run ids, the reader) → {run id: {processId, version, inputExcerpt}} for the runs it knows, in
# one read; the excerpt only of runs the reader may see.
RunsDescriber = Callable[[list[str], User], dict[str, dict[str, Any]]]
_describers: list[RunsDescriber] = []

# A trail decision that wrote something a connected source was sent (its write state).
_SENT = frozenset({TrailOutcome.ALLOWED, TrailOutcome.HELD})


def lineage_runs_describer(describer: RunsDescriber) -> None:
    """Register how runs are described (the processes room, at ready())."""
    if describer not in _describers:
        _describers.append(describer)


@dataclass(frozen=True)
class LineageEntry:
    at: datetime
    action: str
    outcome: str
    actor: str | None
    run_id: str | None
    process_id: str | None
    version: int | None
    step_id: str | None
    input_excerpt: str | None
    source: dict[str, Any] | None

    def as_json(self) -> dict[str, Any]:
        return {
            "at": self.at.isoformat().replace("+00:00", "Z"),
            "action": self.action,
            "outcome": self.outcome,
            "actor": self.actor,
            "runId": self.run_id,
            "processId": self.process_id,
            "version": self.version,
            "stepId": self.step_id,
            "inputExcerpt": self.input_excerpt,
            "source": self.source,
        }


def record_lineage(*, user: User, record_type: str, pg_row_id: str) -> list[LineageEntry]:
    """Every decision about the record, oldest first; 404 for a record ``user`` cannot read."""
    rt = record_type_get(record_type)
    parsed = uuid_or_none(pg_row_id)
    readable = (
        parsed is not None and records_visible(user=user, record_type=rt).filter(pk=parsed).exists()
    )
    trail = list(
        WriteTrail.reads.filter(record_type=rt.name, pg_row_id=parsed).order_by("at", "id")
        if parsed is not None
        else []
    )
    if not readable and not (getattr(user, "is_staff", False) and trail):
        raise RecordNotFound(
            f"no {rt.name} record you can read has pgRowId {pg_row_id!r}", field="pgRowId"
        )
    runs = _runs_described({row.process_run_id for row in trail if row.process_run_id}, user)
    sources = _sources_by_decision(trail, parsed)
    return [_entry(row, runs.get(row.process_run_id), sources.get(row.pk)) for row in trail]


def _runs_described(run_ids: Iterable[str], user: User) -> dict[str, dict[str, Any]]:
    ids = sorted(run_ids)
    described: dict[str, dict[str, Any]] = {}
    for describer in _describers if ids else ():
        described.update(describer(ids, user))
    return described


def _sources_by_decision(trail: list[WriteTrail], pg_row_id: Any) -> dict[int, dict[str, Any]]:
    """Each sending decision's outbound write: the record's write states of an operation, in
    order, matched to that operation's sending decisions in order (both are written in the same
    transaction, one each)."""
    states = RecordWriteState.reads.filter(record__pg_row_id=pg_row_id).order_by("id")
    by_operation: dict[str, list[tuple[str, str | None]]] = {}
    for operation, status, external_id in states.values_list("operation", "status", "external_id"):
        by_operation.setdefault(operation, []).append((status, external_id))
    if not by_operation:
        return {}
    matched: dict[int, dict[str, Any]] = {}
    for row in trail:
        if row.outcome not in _SENT or row.action == TrailAction.SETTLE:
            continue
        queue = by_operation.get(row.action)
        if queue:
            status, external_id = queue.pop(0)
            matched[row.pk] = {"verdict": status, "externalId": external_id}
    return matched


def _entry(
    row: WriteTrail, run: dict[str, Any] | None, source: dict[str, Any] | None
) -> LineageEntry:
    return LineageEntry(
        at=row.at,
        action=row.action,
        outcome=row.outcome,
        actor=row.actor_name or None,  # as the actor was named when the row was written
        run_id=row.process_run_id or None,
        process_id=run["processId"] if run else None,
        version=run["version"] if run else None,
        step_id=row.process_step or None,
        input_excerpt=run["inputExcerpt"] if run else None,
        source=source,
    )
