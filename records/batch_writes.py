"""Many rows' writes in one transaction: a migration batch, each row a create or update per step.

A slice of an ``eachRow`` migration hands over the writes of many rows at once, each row's writes
in step order. Every write is checked as the boundary checks one — payload, write entitlement
(write RLS), the guardrail rule, the ``before_save`` hooks; an update's record is found among the
records the actor may write and locked — all of them **before anything is written**. The rows
that pass, from the first up to the first row any of whose writes would not (refused, its
idempotency key used, its record not found or already written in this batch), are then written
with one statement per table in the caller's transaction: the new records, the updated records,
the outbound write states of connected types and the trail rows, in row order; the records'
watchers are told of each write as one write tells them. An update's record is read as the
columns the batch needs, not as a model (``_Locked``), and its changes merged into its fields
by the database (``records.sql_merges.fields_merge``) — unless its type has ``before_save``
hooks or watchers, which are shown the ``Record`` (read whole, written by ``rows_update``).

The row that stopped the batch is not written here: the caller makes it alone, through the
boundary's one-record services, where its refusal is trailed (or its used key answered) exactly
as any single write's is. So a batch changes how many statements the rows cost, never what they
write.

Not batched (a row of them stops the batch): an update named by ``externalId`` (names may repeat
across sources; the one-record service decides which), an update of a record created or already
updated in the same batch (its version moves per write).
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.db import connection, transaction
from django.utils import timezone

from guardrails.models import RuleAction
from kernel.bulk import rows_insert, rows_update
from kernel.ids import uuid_or_none
from records.batch_creates import NewRecord, records_insert
from records.boundary import record_like, record_shared
from records.catalog import RecordType, record_type_get
from records.door import door_opened
from records.hooks import HookSlot, hooks_for
from records.models import (
    Record,
    RecordWriteState,
    TrailAction,
    TrailOutcome,
    WriteOperation,
    WriteStatus,
    WriteTrail,
)
from records.policies import records_writable, write_entitlement_check
from records.signals import outbound_write_queued
from records.sql_columns import values_among
from records.sql_merges import fields_merge
from records.trail import Actor, trail_row
from records.watches import record_watched, record_written
from records.write_rules import (
    before_save_on_create,
    before_save_on_update,
    payload_check,
    rule_check,
)

# Stands for "no external id was seen": an update that does not check it.
_UNSEEN = object()


@dataclass(frozen=True)
class CreateItem:
    """A create of a batch: the payload and the idempotency key it carries."""

    parent: Any
    lines: Any
    idempotency_key: str


@dataclass(frozen=True)
class UpdateItem:
    """An update of a batch: the record (by ``pgRowId``) and the fields it changes.
    ``seen_external_id``: the record's external id as the caller told later steps; the row stops
    the batch if the locked record has another."""

    parent: Any
    pg_row_id: Any
    seen_external_id: Any = _UNSEEN


@dataclass(frozen=True)
class BatchWrite:
    """One write of a row: who makes it (its actor names the step), the type, and what it does.
    A create's record takes ``pg_row_id`` (chosen by the caller, which told later steps)."""

    actor: Actor
    record_type: str
    item: CreateItem | UpdateItem
    pg_row_id: uuid.UUID | None = None


class Written(NamedTuple):
    """A write of a batch as it was written: the record it wrote and whether it created it."""

    record_type: str
    pg_row_id: uuid.UUID
    external_id: str | None
    is_new: bool


class _Locked(NamedTuple):
    """An update's record, locked, as the batch needs it: its columns, no model instance (a type
    with ``before_save`` hooks or watchers gets its ``Record``: they are shown it)."""

    pg_row_id: uuid.UUID
    external_id: str | None
    sync_version: int
    source_system: str


@dataclass
class _Ready:
    """A write checked and built: a create's record as it will be stored (its columns,
    ``NewRecord``, or the ``Record`` its hooks or watchers are shown); an update's record locked
    (``_Locked``, or a ``Record`` with its fields before and after)."""

    write: BatchWrite
    rt: RecordType
    record: Record | _Locked | NewRecord
    before: dict | None = None  # a Record update's fields before it
    fields: dict | None = None  # a Record update's fields after it (as its hooks saw them)

    @property
    def is_new(self) -> bool:
        return isinstance(self.write.item, CreateItem)


def _uuid(value: Any) -> uuid.UUID | None:
    return value if isinstance(value, uuid.UUID) else uuid_or_none(str(value))


class _RowStops(Exception):
    """A write of the row would not pass: the batch ends before this row."""


class _Checks:
    """The checks of one batch, each asked once per (user, type, action) and remembered."""

    def __init__(self, rows: list[list[BatchWrite]]) -> None:
        self._passed: dict[tuple, bool] = {}
        self._hooked: dict[str, bool] = {}
        self._shown: dict[str, bool] = {}
        creates = [
            w.item.idempotency_key for row in rows for w in row if isinstance(w.item, CreateItem)
        ]
        used = Record.reads.filter(idempotency_key__in=values_among(creates))
        self.used = set(used.values_list("idempotency_key", flat=True)) if creates else set()
        self.seen: set[Any] = set()  # keys and records this batch already writes
        self.locked = _lock_targets(rows, self)

    def hooked(self, name: str) -> bool:
        """Whether ``name`` has ``before_save`` hooks (asked once a batch)."""
        if name not in self._hooked:
            self._hooked[name] = bool(hooks_for(HookSlot.BEFORE_SAVE, name))
        return self._hooked[name]

    def shown(self, name: str) -> bool:
        """Whether ``name``'s writes are shown their ``Record`` (hooks or watchers; asked once)."""
        if name not in self._shown:
            self._shown[name] = self.hooked(name) or record_watched(name)
        return self._shown[name]

    def entitled(self, actor: Actor, rt: RecordType, action: RuleAction) -> None:
        key = (actor.user.pk, rt.name, action)
        passed = self._passed.get(key)
        if passed is None:
            try:
                write_entitlement_check(user=actor.user, record_type=rt)
                rule_check(rt, action)
                passed = True
            except Exception:  # the row alone is refused, and trailed, by the boundary
                passed = False
            self._passed[key] = passed
        if not passed:
            raise _RowStops

    def claim(self, key: Any) -> None:
        """A key or record written once in the batch: a second write of it stops the row."""
        if key in self.seen or key in self.used:
            raise _RowStops
        self.seen.add(key)


def _lock_targets(
    rows: list[list[BatchWrite]], checks: _Checks
) -> dict[tuple[str, uuid.UUID], Record | _Locked]:
    """The records the batch's updates name, each locked, read as their actor may write them
    (one query per actor and type, in primary-key order so that batches lock alike): their
    columns (``_Locked``), or the ``Record`` where the type's hooks or watchers are shown it."""
    wanted: dict[tuple[Any, str], tuple[Actor, set[uuid.UUID]]] = {}
    for row in rows:
        for write in row:
            if isinstance(write.item, UpdateItem):
                parsed = _uuid(write.item.pg_row_id)
                if parsed is not None:
                    entry = wanted.setdefault(
                        (write.actor.user.pk, write.record_type), (write.actor, set())
                    )
                    entry[1].add(parsed)
    locked: dict[tuple[str, uuid.UUID], Record | _Locked] = {}
    for (_, name), (actor, ids) in wanted.items():
        try:
            rt = record_type_get(name)
        except Exception:  # an unknown type: the row alone is refused by name
            continue
        found = (
            records_writable(user=actor.user, record_type=rt)
            .select_for_update()
            .filter(pg_row_id__in=values_among([str(i) for i in ids], "uuid"))
            .order_by("pk")
        )
        if checks.shown(name):
            locked.update(((name, record.pk), record) for record in found)
            continue
        columns = found.values_list("pg_row_id", "external_id", "sync_version", "source_system")
        locked.update(((name, values[0]), _Locked(*values)) for values in columns)
    return locked


def _ready(write: BatchWrite, checks: _Checks) -> _Ready:
    """``write`` checked and its record built, or ``_RowStops``."""
    try:
        rt = record_type_get(write.record_type)
    except Exception:
        raise _RowStops from None
    item = write.item
    if isinstance(item, CreateItem):
        checks.entitled(write.actor, rt, RuleAction.CREATE)
        checks.claim(item.idempotency_key)
        shared, lines = record_shared(write.actor, rt), item.lines or []
        payload_check(rt, item.parent, item.lines, is_create=True)
        if not checks.shown(rt.name):  # its columns only: no model instance a row
            chosen = write.pg_row_id or uuid.uuid4()
            new = NewRecord(chosen, shared, item.parent, lines, item.idempotency_key)
            return _Ready(write, rt, new)
        record = record_like(shared, parent=item.parent, lines=lines, key=item.idempotency_key)
        if write.pg_row_id is not None:
            record.pg_row_id = write.pg_row_id
        if checks.hooked(rt.name):
            before_save_on_create(write.actor, rt, record, item.parent)
        return _Ready(write, rt, record)
    checks.entitled(write.actor, rt, RuleAction.UPDATE)
    target = _uuid(item.pg_row_id)
    locked = checks.locked.get((rt.name, target)) if target is not None else None
    if locked is None or (
        item.seen_external_id is not _UNSEEN and item.seen_external_id != locked.external_id
    ):
        raise _RowStops
    checks.claim(locked.pg_row_id)
    payload_check(rt, item.parent, None, is_create=False)
    if isinstance(locked, _Locked):  # no hooks, no watchers: nothing is shown the record
        return _Ready(write, rt, locked)
    merged = before_save_on_update(write.actor, rt, locked, item.parent)
    return _Ready(write, rt, locked, before=locked.fields, fields=merged["parent"])


def _rows_ready(rows: list[list[BatchWrite]]) -> list[list[_Ready]]:
    """The leading rows whose every write passes its checks, each write checked and built."""
    checks = _Checks(rows)
    ready: list[list[_Ready]] = []
    for row in rows:
        try:
            ready.append([_ready(write, checks) for write in row])
        except Exception:  # refused, or worse: the row alone meets it again, and answers it
            break
    return ready


@door_opened
def rows_write(*, rows: list[list[BatchWrite]]) -> list[list[Written]]:
    """Write the leading ``rows`` whose every write passes (see the module docstring) in the
    caller's transaction; answers each written row's writes, in order. A concurrent writer
    that took a create's key since it was checked fails the INSERT with ``IntegrityError``,
    which undoes the caller's transaction."""
    if not connection.in_atomic_block:
        raise AssertionError("rows_write writes inside the caller's transaction")
    ready = _rows_ready(rows)
    writes = [write for row in ready for write in row]
    if not writes:
        return []
    creates = [w.record for w in writes if isinstance(w.record, Record | NewRecord) and w.is_new]
    if creates:
        records_insert(creates)
    _records_update([w for w in writes if not w.is_new])
    _write_states_insert([w for w in writes if w.rt.is_connected])
    for write in writes:  # a type's watchers (record triggers) see each write
        if isinstance(write.record, Record):
            record_written(write.write.actor, write.record, before=write.before)
    _trail_insert(writes)
    return [
        [Written(w.rt.name, w.record.pg_row_id, w.record.external_id, w.is_new) for w in row]
        for row in ready
    ]


def _records_update(updates: list[_Ready]) -> None:
    """The updates: one statement for the records read as columns (their changes merged into
    their fields, version guarded), one for those read as ``Record`` (hooks, watchers)."""
    now = timezone.now()
    merged = [
        (w.record.pg_row_id, w.write.item.parent, w.record.sync_version)
        for w in updates
        if isinstance(w.record, _Locked) and isinstance(w.write.item, UpdateItem)
    ]
    if merged:
        fields_merge(merged, now)
    shown = [w.record for w in updates if isinstance(w.record, Record)]
    for write in updates:
        if isinstance(write.record, Record):
            write.record.fields = write.fields
            write.record.sync_version += 1
            write.record.updated_at = now
    if shown:
        rows_update(Record, shown, ["fields", "sync_version", "updated_at"])


def _write_states_insert(writes: list[_Ready]) -> None:
    """The outbound write of each connected record, in row order, and one wake-up per type."""
    if not writes:
        return
    template = RecordWriteState(
        record_id=writes[0].record.pg_row_id,
        record_type=writes[0].rt.name,
        operation=WriteOperation.CREATE,
        status=WriteStatus.PENDING,
    )
    rows_insert(
        RecordWriteState,
        template,
        {
            "record_id": [w.record.pg_row_id for w in writes],
            "record_type": [w.rt.name for w in writes],
            "source_system": [w.record.source_system for w in writes],
            "operation": [
                WriteOperation.CREATE if w.is_new else WriteOperation.UPDATE for w in writes
            ],
            "payload": [_outbound_payload(w) for w in writes],
        },
    )
    for name in dict.fromkeys(w.rt.name for w in writes):
        transaction.on_commit(functools.partial(_outbound_wake, name))


def _outbound_wake(record_type: str) -> None:
    """One wake-up of the type's outbound drain (it sends every write due of the type)."""
    outbound_write_queued.send(sender=Record, record_type=record_type)


def _outbound_payload(write: _Ready) -> dict[str, Any]:
    item = write.write.item
    if isinstance(item, CreateItem):
        return {"parent": item.parent, "lines": item.lines or []}
    return {"parent": item.parent}


def _trail_insert(writes: list[_Ready]) -> None:
    """The ``allowed`` trail row of every write, in row order, with one INSERT."""
    template = trail_row(
        actor=writes[0].write.actor,
        action=TrailAction.CREATE,
        record_type=writes[0].rt.name,
        outcome=TrailOutcome.ALLOWED,
    )
    rows_insert(
        WriteTrail,
        template,
        {
            "action": [TrailAction.CREATE if w.is_new else TrailAction.UPDATE for w in writes],
            "record_type": [w.rt.name for w in writes],
            "pg_row_id": [w.record.pg_row_id for w in writes],
            "process_step": [w.write.actor.process_step for w in writes],
        },
    )
