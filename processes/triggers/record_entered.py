"""Record triggers: a write that makes a record enter a process's ``enters`` state starts one run.

``trigger: { record: 'salesOrder', enters: { status: 'approved' } }``. The boundary calls
``record_watcher`` (through ``records.watches``) on every create and update; for a type some
process watches, the write enters the state when every key of ``enters`` equals the record's field
now and did not all equal before it (a create had no before). Then one run starts as the writer,
with input ``{recordType, pgRowId, externalId, record: {…fields}}``.

Exactly once per transition:
- the run's row is written in the write's own transaction, so it commits with the write and rolls
  back with it (a write that rolls back starts nothing); its delivery is handed to the lane after
  commit (``transaction.on_commit``), and the lanes' watch re-sends one that was lost;
- the boundary holds the record's row lock while it compares, so of two concurrent writes each
  sees the other's result as its before: one of them made the transition, not both;
- the run's idempotency key is ``record:<process>:<pgRowId>:<syncVersion>`` — the sync version is
  bumped by every write of the record — so a second start for the same write is refused by the
  database however it came about. A write that keeps the record in the state starts nothing;
  leaving and entering again is a new write, with a new version, and starts another run.

A run's own writes never start its own process again: a process whose steps make the record leave
and re-enter its own ``enters`` state would otherwise start itself without end. Other processes
watching the same state still start.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from processes.errors import ProcessNotFound
from processes.events.service import json_equal
from processes.invoke import run_start
from processes.models import ProcessRun
from processes.triggers.index import record_triggers
from processes.triggers.shape import RecordTrigger
from records.watches import RecordWritten, Watcher

logger = logging.getLogger(__name__)


def enters_matches(enters: Mapping[str, Any], fields: Mapping[str, Any]) -> bool:
    """Every key of ``enters`` equals the record's field, as JSON (``true`` is not ``1``; a missing
    field is null)."""
    return all(json_equal(value, fields.get(name)) for name, value in enters.items())


def record_trigger_input(written: RecordWritten) -> dict[str, Any]:
    record = written.record
    return {
        "recordType": record.record_type,
        "pgRowId": str(record.pg_row_id),
        "externalId": record.external_id,
        "record": dict(record.fields),
    }


def _start(trigger: RecordTrigger, written: RecordWritten) -> None:
    record = written.record
    key = f"record:{trigger.process_id}:{record.pg_row_id}:{record.sync_version}"
    try:
        run_start(
            process_id=trigger.process_id,
            body=record_trigger_input(written),
            user=written.actor.user,
            idempotency_key=key,
        )
    except ProcessNotFound:
        # Removed since this process's index was read (it is at most 30 s old): nothing to start.
        logger.info("record trigger of %s: the process is no longer deployed", trigger.process_id)


def record_triggers_fire(written: RecordWritten) -> None:
    """Start one run of every process whose ``enters`` this write made the record enter."""
    fields = written.record.fields
    for trigger in record_triggers(written.record.record_type):
        if not enters_matches(trigger.enters, fields):
            continue
        if written.before is not None and enters_matches(trigger.enters, written.before):
            continue  # it was already in the state: this write keeps it there
        if _written_by_own_run(trigger, written):
            logger.info(
                "record trigger of %s: its own run's write starts nothing", trigger.process_id
            )
            continue
        _start(trigger, written)


def _written_by_own_run(trigger: RecordTrigger, written: RecordWritten) -> bool:
    run_id = written.actor.process_run_id
    if not run_id:
        return False  # an app's or a person's write: the common case costs no query
    return ProcessRun.objects.filter(pk=run_id, process_id=trigger.process_id).exists()


def record_watcher(record_type: str) -> Watcher | None:
    """The ``records.watches`` provider: a dict lookup; the watcher only for a watched type."""
    return record_triggers_fire if record_triggers(record_type) else None
