"""Helpers for the proof that grouping steps changes nothing (issue 21): a fresh instance state
between two runs of one process, and what an outsider can observe of a run afterwards, with the
ids that legitimately differ between two runs (generated pgRowIds, times) replaced by names.

Everything here reads through the public models and writes nothing but the wipe, which deletes the
rows runs and writes leave (the process definitions, users, settings and hooks stay).
"""

from __future__ import annotations

import re
from typing import Any

from django.db import connection, transaction

from guardrails.models import HeldDelete
from guardrails.rules import rules_cache_clear
from processes.models import ProcessRun
from records.models import Record, RecordWriteState, WriteTrail
from sources.models import SandboxDocument, SandboxSend

# Child tables first: SQLite checks foreign keys statement by statement.
_WIPED = (
    "process_run_step",
    "process_run_slice",
    "process_run_tally_delta",
    "process_run_tally",
    "process_task",
    "process_event_wait",
    "process_event",
    "process_run",
    "guardrails_held_delete",
    "guardrails_window_event",
    "guardrails_window_lock",
    "guardrails_rule",
    "record_write_state",
    "write_trail",
    "record",
    "sandbox_send",
    "sandbox_in_flight",
    "sandbox_document",
    "sandbox_counter",
    "sandbox_script",
    "source_lane",
)

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def wipe() -> None:
    """Delete every row a run, a write or the sandbox source left, and the guardrail rules: the
    next run starts from the same state as the first (the sandbox's external ids count afresh)."""
    present = set(connection.introspection.table_names())
    with transaction.atomic(), connection.cursor() as cursor:
        for table in _WIPED:
            if table in present:
                cursor.execute(f"DELETE FROM {connection.ops.quote_name(table)}")
    rules_cache_clear()


class Names:
    """Stable names for generated ids: a seed is ``seed:<i>``, a record a step wrote
    ``step:<step id>`` (``@<row key>`` in a migration; the first ledger row naming it), any other
    ``other:<n>``."""

    def __init__(self, seeds: list[str], run: ProcessRun) -> None:
        self.names: dict[str, str] = {pk: f"seed:{i}" for i, pk in enumerate(seeds)}
        rows = run.ledger.order_by("sequence").values_list("step_id", "row_key", "pg_row_id")
        for step_id, row_key, pk in rows:
            if pk is not None:
                self.names.setdefault(
                    str(pk), f"step:{step_id}" + (f"@{row_key}" if row_key else "")
                )
        for pk in Record.reads.order_by("created_at").values_list("pk", flat=True):
            self.names.setdefault(str(pk), f"other:{len(self.names)}")
        self.names[str(run.pk)] = "run"

    def of(self, value: Any) -> Any:
        """``value`` with every id in it replaced by its name (strings, lists and dicts inside)."""
        if value is None:
            return None
        if isinstance(value, dict):
            return {k: self.of(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.of(v) for v in value]
        if isinstance(value, str) or hasattr(value, "hex"):
            return _UUID.sub(lambda m: self.names.get(m.group(0), "?" + m.group(0)), str(value))
        return value


def observed(run: ProcessRun, seeds: list[str]) -> dict[str, Any]:
    """What the run left that an outsider can see: records, write trail, ledger, outbound writes
    and what reached the source (in order), held deletes, and the run's own state."""
    run.refresh_from_db()
    n = Names(seeds, run)
    records = sorted(
        (
            n.of(r.pk),
            r.record_type,
            n.of(r.fields),
            n.of(r.lines),
            r.sync_state,
            r.sync_version,
            r.external_id,
            r.source_system,
            r.owner_id,
        )
        for r in Record.reads.all()
    )
    trail = [
        (t.action, t.outcome, t.code, t.field, t.record_type, n.of(t.pg_row_id))
        + (n.of(t.message), n.of(t.process_run_id), t.process_step)
        for t in WriteTrail.reads.order_by("id")
    ]
    ledger = [
        (s.sequence, s.step_id, s.record_type, s.action, n.of(s.pg_row_id), s.external_id)
        + (s.disposition, s.skip_reason, s.row_key, s.slice, s.visit, s.created_record)
        + (s.counts_write, s.rollback_keep, s.awaiting_verdict, n.of(s.answer))
        + (s.refusal_code, s.refusal_field, n.of(s.refusal_message), s.write_state_id is None)
        for s in run.ledger.order_by("sequence")
    ]
    outbound = [
        (w.record_type, w.source_system, n.of(w.record_id), w.operation, w.status)
        + (n.of(w.payload), w.reason_code, w.field, n.of(w.message), w.external_id, w.attempts)
        for w in RecordWriteState.reads.order_by("id")
    ]
    states = dict(RecordWriteState.reads.values_list("id", "record_id"))
    sent = [
        (s.record_type, s.operation, n.of(states.get(s.write_state_id)))
        for s in SandboxSend.objects.order_by("id")
    ]
    upstream = sorted(
        (d.external_id, d.record_type, n.of(d.fields), n.of(d.lines), d.is_deleted)
        for d in SandboxDocument.objects.all()
    )
    held = sorted(
        (h.record_type, n.of(h.pg_row_id), n.of(h.process_run_id), h.process_step, h.status)
        for h in HeldDelete.objects.all()
    )
    return {
        "run": (run.state, n.of(run.reason), run.outstanding, run.writes, run.pending_reason)
        + (run.waiting_step, run.failed_sequence, run.slices, run.rollback_requested),
        "records": records,
        "trail": trail,
        "ledger": ledger,
        "outbound": outbound,
        "sent": sent,
        "upstream": upstream,
        "held": held,
    }
