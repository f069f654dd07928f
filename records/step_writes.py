"""A process step's write grouped with its neighbours': what the records room asks of the engine,
and the door through which a group of checked creates is written.

The engine groups a delivery's consecutive create steps (``processes.engine.grouping``). Each is
checked and built here first (``record_create_ready``: payload, entitlement, guardrail rule,
``before_save`` hooks — the same checks as ``record_create``, a refusal raised at once) into a
``CreateReady``: its record, its ``allowed`` trail row, a connected type's outbound write state,
and the caller's row that must commit with it (the step's ledger row); an update or delete of a
type with nothing to run on its record first is made ready before its record is read, and the
group's records are read in one query as it commits (``records.step_reads``); an update of a
record the group creates is folded into its create (``records.step_folds``). ``group_commit`` then
writes a group — the caller's lease proof, and every row of every write in it — in one
autocommitted statement (``records.sql_writes.group_insert``): all of them or none. When a type of
the group is watched, that statement and the watchers' rows (a record trigger's run) share one
transaction instead, as a write made alone shares its own with them.

The caller proves its lease through ``StepGate``, a protocol this room declares: it answers a
typed ``LeaseProof`` (which row it holds, by which owner token, which columns to set on it, which
column to answer) and is told what the proof answered. No SQL crosses the rooms' border.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from django.db import IntegrityError, connections, models, router, transaction
from django.utils import timezone

from guardrails.models import RuleAction
from kernel.errors import NotFound
from records.boundary import create_check, record_new, trail_allowed
from records.catalog import RecordType, record_type_get
from records.deletes import after_delete_schedule
from records.door import door_opened
from records.errors import SyncVersionMoved
from records.hooks import HookContext, HookSlot, hooks_for, hooks_run
from records.models import (
    Record,
    RecordWriteState,
    TrailAction,
    TrailOutcome,
    WriteOperation,
    WriteTrail,
)
from records.policies import write_entitlement_check
from records.sql_writes import GroupInserted, GroupMoved, GroupRows, group_insert
from records.step_deletes import DeleteReady, charges_held, delete_groupable, delete_queued
from records.step_reads import (
    ReadLater,
    first_moved,
    first_taken,
    group_reads,
    read_later,
    record_stub,
)
from records.trail import Actor, trail_row
from records.units import WriteUnit, refusing, unit_current
from records.watches import record_watched, record_written
from records.write_rules import (
    before_save_on_create,
    before_save_on_update,
    outbound_wake,
    payload_check,
    record_address,
    record_snapshot,
    rule_check,
    write_state_row,
)


@dataclass(frozen=True)
class LeaseProof:
    """A conditional UPDATE proving a holder still holds a row: ``model``'s row ``pk`` where
    ``owner_field`` is ``owner``, setting ``sets`` (its lease's end, say), answering
    ``answer_field`` (a flag the holder wants read back, e.g. a cancel request)."""

    model: type[models.Model]
    pk: Any
    owner_field: str
    owner: str
    sets: Mapping[str, Any]
    answer_field: str


class StepGate(Protocol):
    """How a caller proves, inside the statement or transaction of its write, that it still holds
    its lease: the proof to run, and what it answered (None: no row — the lease was lost; the
    gate raises then, and nothing was written)."""

    def proof(self) -> LeaseProof: ...

    def proved(self, answer: Any) -> None: ...


@dataclass
class CreateReady:
    """A create checked and built (``record_create_ready``), nothing written yet, and the
    caller's ``row`` that commits with it (a process step's ledger row; ``group_commit``)."""

    actor: Actor
    record: Record
    trail: WriteTrail
    row: models.Model | None = None
    state: RecordWriteState | None = None  # a connected type's outbound write


@dataclass
class UpdateReady:
    """An update checked and built (``record_update_ready``), nothing written yet: ``record`` as
    it will be stored (its fields merged, its version moved on), the ``version`` it was read at —
    the group's write changes it only if it is still there — and the caller's ``row``."""

    actor: Actor
    record: Record
    trail: WriteTrail
    version: int
    before: dict
    row: models.Model | None = None
    state: RecordWriteState | None = None  # a connected type's outbound write
    later: ReadLater | None = None  # its record read with the group's (``records.step_reads``)
    folded: bool = False  # its record is one the group creates (``records.step_folds``)


GroupReady = CreateReady | UpdateReady | DeleteReady


class GroupKeyTaken(Exception):
    """A create's idempotency key was already used: ``group_commit`` wrote nothing. ``index``: the
    first create (in order) whose key is taken — those before it may be committed again. Not a
    refusal (the caller makes that step again, alone), so not of the ``TurbobaseError`` family."""

    def __init__(self, index: int) -> None:
        super().__init__(f"the idempotency key of grouped create {index} is already used")
        self.index = index


class GroupStale(Exception):
    """An update's record moved since it was read (another writer changed it): ``group_commit``
    wrote nothing. ``index``: the first such update — those before it may be committed again;
    the caller makes that step again, alone (locked, as any update)."""

    def __init__(self, index: int) -> None:
        super().__init__(f"the record of grouped update {index} moved since it was read")
        self.index = index


@dataclass(frozen=True)
class GroupCommitted:
    """What ``group_commit`` did: whether the gate's proof answered a row, how many writes landed."""

    proved: bool
    written: int


def create_groupable(record_type: str) -> bool:
    """Whether a write of ``record_type`` made now can be grouped: on PostgreSQL, outside any
    transaction, a type the catalog knows. Its ``before_save`` hooks run when it is made ready; a
    connected type's outbound write is written with it; a watched type's watchers are told in
    the group's transaction (``group_commit``)."""
    conn = connections[router.db_for_write(Record)]
    if conn.vendor != "postgresql" or conn.in_atomic_block:
        return False
    try:
        record_type_get(record_type)
    except NotFound:  # the write itself refuses it, by name
        return False
    return True


@door_opened
def record_create_ready(
    *,
    actor: Actor,
    record_type: str,
    parent: Any,
    lines: Any = None,
    idempotency_key: str,
    pg_row_id: uuid.UUID,
    unit: WriteUnit,
) -> CreateReady | None:
    """``record_create``'s checks and rows, nothing written: a ``CreateReady`` that
    ``group_commit`` writes, with others, in one statement. ``pg_row_id``: the record's id,
    chosen by the caller (a step tells the next step its outcome before the write). A refusal
    raises, its trail row kept on ``unit`` (as inside a ``WriteUnit``). None when the create
    cannot be grouped (``create_groupable``): the caller makes it with ``record_create``."""
    if not create_groupable(record_type):
        return None
    rt = record_type_get(record_type)
    record = record_new(actor, rt, parent, lines, idempotency_key, pg_row_id)
    token = unit_current.set(unit)
    try:
        with refusing(actor, TrailAction.CREATE, rt.name):
            create_check(actor, rt, parent, lines)
            if hooks_for(HookSlot.BEFORE_SAVE, rt.name):
                before_save_on_create(actor, rt, record, parent)
    finally:
        unit_current.reset(token)
    state = None
    if rt.is_connected:
        payload = {"parent": parent, "lines": lines or []}
        state = write_state_row(record, WriteOperation.CREATE, payload)
    return CreateReady(actor, record, trail_allowed(actor, rt, record), state=state)


@door_opened
def record_update_ready(
    *,
    actor: Actor,
    record_type: str,
    parent: Any,
    pg_row_id: uuid.UUID,
    expected_sync_version: int | None = None,
    unit: WriteUnit,
) -> UpdateReady | None:
    """``record_update``'s checks and hooks, nothing written: an ``UpdateReady`` that
    ``group_commit`` writes with others. The record is read as its writer may see it, unlocked
    (outside any transaction); the group's write changes it only at the version read, else
    ``GroupStale``. A refusal raises, its trail row kept on ``unit``. None when the update
    cannot be grouped (``create_groupable``'s conditions): the caller makes it alone."""
    if not create_groupable(record_type):
        return None
    rt = record_type_get(record_type)
    token = unit_current.set(unit)
    try:
        with refusing(actor, TrailAction.UPDATE, rt.name, pg_row_id):
            record, before = _update_checked(actor, rt, parent, pg_row_id, expected_sync_version)
    finally:
        unit_current.reset(token)
    trail = trail_row(
        actor=actor,
        action=TrailAction.UPDATE,
        record_type=rt.name,
        outcome=TrailOutcome.ALLOWED,
        pg_row_id=pg_row_id,
    )
    if record is None:  # read with the group's records, just before its statement
        later = ReadLater(rt, dict(parent))
        return UpdateReady(actor, record_stub(rt, pg_row_id), trail, 0, {}, later=later)
    version = record.sync_version
    record.sync_version, record.updated_at = version + 1, timezone.now()
    state = None
    if rt.is_connected:
        state = write_state_row(record, WriteOperation.UPDATE, {"parent": parent})
    return UpdateReady(actor, record, trail, version, before, state=state)


def _update_checked(
    actor: Actor, rt: RecordType, parent: Any, pg_row_id: uuid.UUID, expected: int | None
) -> tuple[Record | None, dict]:
    """The update's checks in ``record_update``'s order; the record read (its fields merged as
    its hooks saw them) and its fields before — none when it is read with the group's."""
    payload_check(rt, parent, None, is_create=False)
    write_entitlement_check(user=actor.user, record_type=rt)
    rule_check(rt, RuleAction.UPDATE)
    if read_later(rt, HookSlot.BEFORE_SAVE, expected):
        return None, {}
    record = record_address(actor, rt, pg_row_id=pg_row_id, external_id=None, lock=False)
    if expected is not None and int(expected) != record.sync_version:
        raise SyncVersionMoved(
            f"expected sync version {expected}, the record is at {record.sync_version}",
            field="expectedSyncVersion",
        )
    merged = before_save_on_update(actor, rt, record, parent)
    before, record.fields = record.fields, merged["parent"]
    return record, before


@door_opened
def record_delete_ready(
    *, actor: Actor, record_type: str, pg_row_id: uuid.UUID, unit: WriteUnit
) -> DeleteReady | None:
    """``record_delete``'s checks and ``before_delete`` hooks, nothing written: a
    ``DeleteReady`` that ``group_commit`` writes with others (the record read unlocked, removed
    — or, connected, hidden and its delete queued and charged — only at the version read, else
    ``GroupStale``). None when the type cannot be grouped, or for a connected record's delete
    that is held or whose window is full (``records.step_deletes``): the caller makes it with
    ``record_delete``."""
    if not create_groupable(record_type):
        return None
    rt = record_type_get(record_type)
    token = unit_current.set(unit)
    try:
        with refusing(actor, TrailAction.DELETE, rt.name, pg_row_id):
            write_entitlement_check(user=actor.user, record_type=rt)
            decision = rule_check(rt, RuleAction.DELETE)
            if read_later(rt, HookSlot.BEFORE_DELETE):  # read with the group's records
                trail = trail_row(
                    actor=actor,
                    action=TrailAction.DELETE,
                    record_type=rt.name,
                    outcome=TrailOutcome.ALLOWED,
                    pg_row_id=pg_row_id,
                )
                stub = record_stub(rt, pg_row_id)
                return DeleteReady(actor, stub, trail, 0, {}, later=ReadLater(rt))
            record = record_address(actor, rt, pg_row_id=pg_row_id, external_id=None, lock=False)
            if rt.is_connected and not delete_groupable(record, decision):
                return None
            snapshot = record_snapshot(record)
            hooks_run(
                HookContext(
                    HookSlot.BEFORE_DELETE,
                    rt.name,
                    WriteOperation.DELETE,
                    snapshot,
                    actor=actor.user.get_username(),
                    process_run_id=actor.process_run_id or None,
                )
            )
    finally:
        unit_current.reset(token)
    trail = trail_row(
        actor=actor,
        action=TrailAction.DELETE,
        record_type=rt.name,
        outcome=TrailOutcome.ALLOWED,
        pg_row_id=record.pg_row_id,
    )
    ready = DeleteReady(actor, record, trail, record.sync_version, record_snapshot(record))
    if rt.is_connected:
        delete_queued(ready, decision)
    return ready


# The unique constraint on Record.idempotency_key (records/0004): a create's key already used.
_KEY_UNIQUE = "record_idempotency_key"


@door_opened
def group_commit(writes: list[GroupReady], gate: StepGate, *, cut: bool) -> GroupCommitted:
    """Write ``writes`` — each record created or changed, its trail row, its caller's row and
    outbound write — behind the gate's proof in one autocommitted statement: all of them or
    none. With ``cut``, when the proof answers true (the run's cancel request), only the first
    is written. Raises ``GroupKeyTaken`` when a record's idempotency key was used already,
    ``GroupStale`` when an update's record moved since it was read (nothing written either
    way), and whatever the gate raises when its proof answered no row (nothing written)."""
    unread = group_reads(writes)  # the records of writes made ready before their read
    if unread is not None:
        raise GroupStale(unread)
    final = {w.record.pk: w.record for w in writes if isinstance(w, UpdateReady) and w.folded}
    rows = [
        GroupRows(
            w.record,
            w.trail,
            _caller_row(w),
            w.state,
            version=None if isinstance(w, CreateReady) else w.version,
            delete=isinstance(w, DeleteReady),
            final=final.get(w.record.pk) if isinstance(w, CreateReady) else None,
            folded=isinstance(w, UpdateReady) and w.folded,
            **(w.group_parts() if isinstance(w, DeleteReady) else {}),
        )
        for w in writes
    ]
    try:
        done = _group_written(writes, gate, rows, cut=cut)
    except IntegrityError as exc:
        if getattr(getattr(exc.__cause__, "diag", None), "constraint_name", "") != _KEY_UNIQUE:
            raise
        raise GroupKeyTaken(first_taken(writes, (CreateReady,))) from exc
    except GroupMoved as exc:
        raise GroupStale(first_moved(writes, (UpdateReady, DeleteReady))) from exc
    gate.proved(done.answer if done.proved else None)
    for write in writes[: done.written]:
        if isinstance(write, DeleteReady):  # committed: its after_delete hooks run now
            after_delete_schedule(write.actor, write.record.record_type, write.snapshot)
    connected = {w.record.record_type for w in writes[: done.written] if w.state is not None}
    for record_type in sorted(connected):  # the statement committed: the drains may send
        outbound_wake(record_type)
    return GroupCommitted(done.proved, done.written)


def _group_written(
    writes: list[GroupReady], gate: StepGate, rows: list[GroupRows], *, cut: bool
) -> GroupInserted:
    """The group's statement and, when a type of it is watched, its watchers told of each create
    and update in the same transaction (BEGIN and COMMIT more): a watcher's rows (a triggered
    run's) commit and roll back with the write, as with a write made alone."""
    watched = any(record_watched(name) for name in {w.record.record_type for w in writes})
    charged = any(isinstance(w, DeleteReady) and w.charge for w in writes)
    if not watched and not charged:
        return group_insert(gate, rows, cut=cut)
    with transaction.atomic(using=router.db_for_write(Record)):
        capped = charges_held(writes)  # a connected delete's window, decided under its lock
        if capped is not None:
            raise GroupStale(capped)
        done = group_insert(gate, rows, cut=cut)
        for write in writes[: done.written]:
            if isinstance(write, CreateReady | UpdateReady):
                before = write.before if isinstance(write, UpdateReady) else None
                record_written(write.actor, write.record, before=before)
    return done


def _caller_row(write: GroupReady) -> models.Model:
    assert write.row is not None, "a grouped write is committed with its caller's row"
    return write.row
