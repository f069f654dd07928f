"""A grouped delete of a connected record (``records.step_writes.record_delete_ready``): decided as
``records.deletes`` decides it alone, per step, in order — the guardrail rule (a delete held for an
operator is not grouped), the delete window's caps (a window with no room is not grouped: the step
runs alone and waits for it) — then hidden, its outbound delete queued and the window charged by
the group's statement.

The window is decided twice: when the step is made ready, from the charges committed then (a
forecast, unlocked), and again as the group commits, under the window's lock — the one the delete
made alone takes — counting every charge committed before it and the group's own charges before
each (``charges_held``). A group whose charge no longer fits writes nothing; its steps before that
delete are written again without it and the delete is made alone (``GroupStale``), so two writers
never spend the same last slot.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from django.db import models
from django.utils import timezone

from guardrails.models import Decision, WindowEvent, WindowKind
from guardrails.windows import window_hold, window_room
from records.codes import RefusalCode
from records.models import Record, RecordWriteState, SyncState, WriteOperation, WriteTrail
from records.step_reads import ReadLater
from records.trail import Actor
from records.write_rules import record_snapshot, write_state_row


@dataclass
class DeleteReady:
    """A delete checked (``record_delete_ready``): its record as read, at ``version`` — the
    group removes it (app-owned) or hides it (connected: ``records.step_deletes``) only if it is
    still there at that version — its ``before_delete`` hooks run, its snapshot for the
    ``after_delete`` hooks, the caller's row."""

    actor: Actor
    record: Record
    trail: WriteTrail
    version: int
    snapshot: dict
    row: models.Model | None = None
    state: RecordWriteState | None = None  # a connected record's outbound delete
    hidden_from: str | None = None  # connected: hidden, only if still in this sync state
    charge: WindowEvent | None = None  # connected: the delete window's charge
    state_ref: str = ""  # the caller's row's field that takes ``state``'s id (it waits on it)
    later: ReadLater | None = None  # its record read with the group's (``records.step_reads``)

    def group_parts(self) -> dict[str, Any]:
        """What ``records.sql_writes.GroupRows`` takes of a delete beyond any write's rows."""
        return {"hidden_from": self.hidden_from, "charge": self.charge, "state_ref": self.state_ref}


def delete_groupable(record: Record, decision: str) -> bool:
    """Whether a connected record's delete may be grouped: not held for an operator and the
    delete window has room for it now (else it is made alone: held, or waiting for the window)."""
    if decision == Decision.HOLD:
        return False
    return window_room(kind=WindowKind.DELETE, source_system=record.source_system).admitted


def delete_queued(ready: DeleteReady, decision: str) -> None:
    """Make ``ready`` a connected record's delete as ``records.deletes`` queues one: the record
    hidden (only if still in the sync state read), its outbound delete and the window's charge,
    its trail row marked as audited when its rule says so."""
    record = ready.record
    prior = record.sync_state
    record.sync_state, record.updated_at = SyncState.DELETING, timezone.now()
    ready.hidden_from = prior
    ready.state = write_state_row(record, WriteOperation.DELETE, {"prior_state": prior})
    ready.charge = WindowEvent(kind=WindowKind.DELETE, source_system=record.source_system)
    ready.snapshot = record_snapshot(record)  # the after_delete hooks see it hidden, as alone
    if decision == Decision.ALLOW_WITH_AUDIT:
        ready.trail.code = RefusalCode.ALLOW_WITH_AUDIT


def charges_held(writes: list[Any]) -> int | None:
    """Inside the group's transaction: lock what the group's connected deletes charge, after
    the records the group changes (the order a delete made alone locks them in), and charge
    each in order where its window still has room. None when all fit; else the position of
    the first that does not (nothing is charged)."""
    charged = [(n, w.charge) for n, w in enumerate(writes) if getattr(w, "charge", None)]
    if not charged:
        return None
    changed = [w.record.pk for w in writes if getattr(w, "version", None) is not None]
    list(Record.objects.select_for_update().filter(pk__in=changed).values_list("pk", flat=True))
    windows = sorted({(c.kind, c.source_system) for _, c in charged})
    for kind, source in windows:  # one order for every writer: no deadlock between groups
        window_hold(kind=kind, source_system=source)
    now, pending = timezone.now(), Counter[tuple[str, str]]()
    for n, charge in charged:
        window = (charge.kind, charge.source_system)
        room = window_room(
            kind=window[0], source_system=window[1], now=now, pending=pending[window]
        )
        if not room.admitted:
            return n
        pending[window] += 1
        charge.at = now
    return None
